#!/bin/sh
# make deps, runsc's part: install the newest runsc that the machine's own
# Debian archive offers, and upgrade an older one already installed.
#
#   RUNSC_CHANNEL=backports (default)
#       Debian 12 (bookworm): add bookworm-backports from the mirror the
#       machine already uses, pinned so that runsc alone comes from it
#       (runsc is one static Go binary: it depends on nothing), and
#       install runsc from there (0.0~20240729: the systrap platform,
#       seccomp errnoRet honoured).  Debian 13 and later: the main suite
#       already carries that release, nothing is added.
#   RUNSC_CHANNEL=stable
#       the release's own runsc (bookworm: 0.0~20221219, ptrace only);
#       tollgate's backports source and pin are removed again, and a
#       backports runsc is downgraded to it.
#   RUNSC_APT_SIMULATE=1
#       print what apt-get would do (apt-get -s) instead of installing;
#       the source and pin files are still written.
#
# Idempotent: a second run changes nothing and runs no apt-get update.
set -eu

channel=${RUNSC_CHANNEL:-backports}
sources=/etc/apt/sources.list.d/tollgate-backports.sources
pin=/etc/apt/preferences.d/tollgate-runsc
apt_install="apt-get install -y -qq --no-install-recommends"
[ "${RUNSC_APT_SIMULATE:-0}" = 1 ] && apt_install="apt-get install -s --no-install-recommends"

case $channel in
  backports|stable) ;;
  *) echo "make deps: RUNSC_CHANNEL must be backports or stable, not '$channel'" >&2; exit 2 ;;
esac

. /etc/os-release
codename=${VERSION_CODENAME:-}

# The mirror this machine's bookworm suite comes from (deb822 URIs: or a
# one-line `deb URL bookworm ...`), so the backports suite is fetched from
# the same host; deb.debian.org when none is found.
mirror() {
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] && [ "$f" != "$sources" ] || continue
    case $f in
      *.sources)
        awk -v s="$codename" '
          /^[ \t]*$/ { if (u != "" && hit) { print u; exit } u = ""; hit = 0; next }
          tolower($1) == "uris:" { u = $2 }
          tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == s) hit = 1 }
          END { if (u != "" && hit) print u }' "$f" ;;
      *)
        sed 's/\[[^]]*\]//' "$f" | awk -v s="$codename" '$1 == "deb" && $3 == s { print $2; exit }' ;;
    esac
  done | grep -v security | head -n1
}

installed() { dpkg-query -W -f='${Status} ${Version}\n' runsc 2>/dev/null | awk '/^install ok installed/ { print $4 }'; }
candidate() { apt-cache policy runsc 2>/dev/null | awk '$1 == "Candidate:" { print $2 }'; }

updated=0
write_if_changed() { # FILE CONTENT: 0 when the file changed
  if [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; then return 1; fi
  printf '%s\n' "$2" >"$1"
  return 0
}

if [ "$codename" = bookworm ] && [ "$channel" = backports ]; then
  url=$(mirror)
  url=${url:-http://deb.debian.org/debian}
  changed=0
  write_if_changed "$sources" "# Written by tollgate's make deps (RUNSC_CHANNEL=backports): Debian's
# bookworm-backports, for runsc alone (see $pin).
Types: deb
URIs: $url
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" && changed=1
  # runsc from backports; every other package stays on stable (100 is
  # below the 500 of the release: nothing is installed or upgraded from
  # backports unless asked for by name).
  write_if_changed "$pin" "# Written by tollgate's make deps: runsc alone from bookworm-backports.
Package: runsc
Pin: release n=bookworm-backports
Pin-Priority: 990

Package: *
Pin: release n=bookworm-backports
Pin-Priority: 100" && changed=1
  if [ "$changed" = 1 ] || ! apt-cache policy runsc 2>/dev/null | grep -q bookworm-backports; then
    echo "make deps: runsc from bookworm-backports ($url)"
    apt-get update -qq
    updated=1
  fi
elif [ "$channel" = stable ] && { [ -f "$sources" ] || [ -f "$pin" ]; }; then
  echo "make deps: RUNSC_CHANNEL=stable: removing $sources and $pin"
  rm -f "$sources" "$pin"
  apt-get update -qq
  updated=1
fi

want=$(candidate)
if [ -z "$want" ] || [ "$want" = "(none)" ]; then
  [ "$updated" = 1 ] || { apt-get update -qq; updated=1; }
  want=$(candidate)
fi
have=$(installed)
if [ -z "$want" ] || [ "$want" = "(none)" ]; then
  echo "make deps: this machine's apt sources offer no runsc package" >&2
  exit 1
fi
if [ "$have" != "$want" ]; then
  echo "make deps: runsc ${have:-not installed} -> $want ($channel)"
  DEBIAN_FRONTEND=noninteractive $apt_install --allow-downgrades "runsc=$want"
else
  echo "make deps: runsc $have ($channel) is current"
fi
