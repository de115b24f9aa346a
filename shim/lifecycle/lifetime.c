/* A container's owner and deadline (shim/lifecycle/lifetime.h). */
#include "shim/lifecycle/lifetime.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"
#include "shim/lifecycle/state.h"

#define MAX_SECONDS (10LL * 366 * 24 * 3600)

static bool all_digits(const char *s) {
  if (*s == '\0')
    return false;
  for (; *s; s++)
    if (!isdigit((unsigned char)*s))
      return false;
  return true;
}

/* "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)" (RFC 3339 section 5.6). */
static int parse_rfc3339(const char *s, long long *out) {
  int y, mo, d, h, mi, sec, n = 0;
  if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n != 19)
    return -1;
  const char *p = s + n;
  if (*p == '.') {
    p++;
    if (!isdigit((unsigned char)*p))
      return -1;
    while (isdigit((unsigned char)*p))
      p++;
  }
  long long offset = 0;
  if (*p == 'Z' || *p == 'z') {
    p++;
  } else if (*p == '+' || *p == '-') {
    int oh, om, m = 0;
    if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || m != 5 || oh > 23 || om > 59)
      return -1;
    offset = (oh * 3600LL + om * 60LL) * (*p == '-' ? -1 : 1);
    p += 6;
  } else {
    return -1;
  }
  if (*p != '\0' || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
    return -1;
  struct tm tm = {.tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h, .tm_min = mi, .tm_sec = sec};
  time_t t = timegm(&tm);
  if (t == (time_t)-1)
    return -1;
  *out = (long long)t - offset;
  return 0;
}

int lifetime_parse_deadline(const char *s, time_t now, long long *deadline, tg_error **err) {
  if (all_digits(s)) {
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno != 0 || v < 1 || v > MAX_SECONDS)
      return tg_error_set(err, 0, "--deadline %s: give 1 to %lld seconds from now, or an RFC 3339 time", s,
                          MAX_SECONDS);
    /* A deadline is a whole second and `now` is one cut down to it: one
     * more keeps `--deadline N` from being due before N seconds have
     * passed (`--deadline 1` made late in a second was due at once, and
     * the start that followed reaped it). */
    *deadline = (long long)now + v + 1;
    return 0;
  }
  long long t;
  if (parse_rfc3339(s, &t) < 0)
    return tg_error_set(err, 0, "--deadline %s: give SECONDS from now or an RFC 3339 time such as "
                        "2026-12-06T05:00:00Z", s);
  if (t <= (long long)now)
    return tg_error_set(err, 0, "--deadline %s: that time has passed: give a time to come", s);
  *deadline = t;
  return 0;
}

/* Field 3 (state) and 22 (start time) of /proc/PID/stat: 0, or -1 when
 * there is no such process. */
static int read_stat(pid_t pid, char *state, unsigned long long *start) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  if (n <= 0)
    return -1;
  buf[n] = '\0';
  /* The command name (field 2) may hold spaces and parentheses. */
  char *p = strrchr(buf, ')');
  if (p == NULL || p[1] != ' ' || p[2] == '\0')
    return -1;
  *state = p[2];
  for (int field = 2; field < 22 && p != NULL; field++)
    p = strchr(p + 1, ' ');
  if (p == NULL)
    return -1;
  *start = strtoull(p + 1, NULL, 10);
  return *start > 0 ? 0 : -1;
}

unsigned long long lifetime_self_pidns(void) {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? (unsigned long long)st.st_ino : 0;
}

bool lifetime_pidns_elsewhere(unsigned long long ns) {
  return ns != 0 && ns != lifetime_self_pidns();
}

/* The initial pid namespace's inode (PROC_PID_INIT_INO): fixed by the
 * kernel, never given to another namespace. */
#define INITIAL_PIDNS 0xEFFFFFFCULL

bool lifetime_sees_every_pidns(void) { return lifetime_self_pidns() == INITIAL_PIDNS; }

/* Whether /proc/PID/status says the process has one pid only (its
 * "NSpid:" line has one number): it is in the initial namespace. */
static bool in_initial_pidns_only(const char *pid) {
  cleanup_free char *path = xasprintf("/proc/%s/status", pid);
  cleanup_free char *buf = NULL;
  size_t len = 0;
  tg_error *e = NULL;
  if (read_file(path, 1 << 16, &buf, &len, &e) < 0) {
    bool gone = e->errnum == ENOENT || e->errnum == ESRCH; /* exited meanwhile */
    tg_error_free(&e);
    return gone;
  }
  const char *line = strstr(buf, "\nNSpid:");
  if (line == NULL)
    return false;
  line += strlen("\nNSpid:");
  int numbers = 0;
  for (const char *p = line; *p != '\0' && *p != '\n'; p++)
    if (isdigit((unsigned char)*p) && (p == line || !isdigit((unsigned char)p[-1])))
      numbers++;
  return numbers == 1;
}

bool lifetime_pidns_ended(unsigned long long ns) {
  if (ns == 0 || ns == INITIAL_PIDNS || !lifetime_sees_every_pidns())
    return false;
  DIR *d = opendir("/proc");
  if (d == NULL)
    return false;
  bool seen = false;
  for (struct dirent *e; !seen && (errno = 0, e = readdir(d)) != NULL;) {
    if (!all_digits(e->d_name))
      continue;
    cleanup_free char *path = xasprintf("/proc/%s/ns/pid", e->d_name);
    struct stat st;
    /* Gone meanwhile (ENOENT): not in ns.  A process this one may not
     * inspect (EACCES: a more privileged one) is in ns unless its status
     * shows it numbered in one namespace only, the initial one.  Any
     * other failure could hide it. */
    if (stat(path, &st) == 0)
      seen = (unsigned long long)st.st_ino == ns;
    else if (errno == EACCES)
      seen = !in_initial_pidns_only(e->d_name);
    else if (errno != ENOENT && errno != ESRCH)
      seen = true;
  }
  bool complete = errno == 0;
  closedir(d);
  return complete && !seen;
}

unsigned long long lifetime_state_pidns(const json_t *state) {
  long long ns = 0;
  return json_integer_value(json_object_get(state, "pid_ns"), &ns) && ns > 0 ? (unsigned long long)ns : 0;
}

int lifetime_parse_owner(const char *s, struct lifetime *lt, tg_error **err) {
  errno = 0;
  long long v = all_digits(s) ? strtoll(s, NULL, 10) : -1;
  if (errno != 0 || v < 1 || v > INT_MAX)
    return tg_error_set(err, 0, "--owner-pid %s: give the pid of the process that owns the container", s);
  char st;
  unsigned long long start;
  if (read_stat((pid_t)v, &st, &start) < 0 || st == 'Z' || st == 'X')
    return tg_error_set(err, 0, "--owner-pid %s: no such live process: a container's owner must be running "
                        "when it is created", s);
  lt->owner_pid = (pid_t)v;
  lt->owner_start = start;
  lt->owner_pidns = lifetime_self_pidns();
  return 0;
}

void lifetime_owner_self(struct lifetime *lt) {
  char st;
  unsigned long long start;
  if (read_stat(getpid(), &st, &start) < 0)
    return;
  lt->owner_pid = getpid();
  lt->owner_start = start;
  lt->owner_pidns = lifetime_self_pidns();
}

bool lifetime_is_set(const struct lifetime *lt) { return lt->owner_pid > 0 || lt->deadline > 0; }

json_t *lifetime_json(const struct lifetime *lt) {
  json_t *o = json_new_object();
  if (lt->owner_pid > 0) {
    json_t *ow = json_new_object();
    json_object_set(ow, "pid", json_new_integer(lt->owner_pid));
    json_object_set(ow, "start_time", json_new_integer((long long)lt->owner_start));
    json_object_set(ow, "pid_ns", json_new_integer((long long)lt->owner_pidns));
    json_object_set(o, "owner", ow);
  } else {
    json_object_set(o, "owner", json_new_null());
  }
  if (lt->deadline > 0) {
    struct timespec ts = {.tv_sec = (time_t)lt->deadline};
    char text[48];
    rfc3339_time(&ts, text, sizeof text);
    json_object_set(o, "deadline", json_new_integer(lt->deadline));
    json_object_set(o, "deadline_text", json_new_string(text));
  } else {
    json_object_set(o, "deadline", json_new_null());
    json_object_set(o, "deadline_text", json_new_null());
  }
  return o;
}

int lifetime_write(const char *dir, const struct lifetime *lt, tg_error **err) {
  cleanup_json json_t *o = lifetime_json(lt);
  return state_write_json(dir, LIFETIME_FILE, o, err);
}

int lifetime_read(const char *dir, struct lifetime *lt, tg_error **err) {
  memset(lt, 0, sizeof *lt);
  cleanup_free char *path = xasprintf("%s/%s", dir, LIFETIME_FILE);
  if (access(path, F_OK) < 0 && errno == ENOENT)
    return 0;
  cleanup_json json_t *o = state_read_json(dir, LIFETIME_FILE, err);
  if (o == NULL)
    return -1;
  const json_t *ow = json_object_get(o, "owner");
  long long pid = 0, start = 0, ns = 0, deadline = 0;
  if (json_is(ow, JSON_OBJECT) &&
      (!json_integer_value(json_object_get(ow, "pid"), &pid) ||
       !json_integer_value(json_object_get(ow, "start_time"), &start) ||
       !json_integer_value(json_object_get(ow, "pid_ns"), &ns) || pid < 1 || pid > INT_MAX || start < 1 || ns < 0))
    return tg_error_set(err, 0, "%s: owner: malformed", path);
  const json_t *dl = json_object_get(o, "deadline");
  if (dl != NULL && !json_is(dl, JSON_NULL) && (!json_integer_value(dl, &deadline) || deadline < 1))
    return tg_error_set(err, 0, "%s: deadline: malformed", path);
  lt->owner_pid = (pid_t)pid;
  lt->owner_start = (unsigned long long)start;
  lt->owner_pidns = (unsigned long long)ns;
  lt->deadline = deadline;
  return 1;
}

int lifetime_set_deadline(const char *dir, long long deadline, tg_error **err) {
  struct lifetime lt;
  if (lifetime_read(dir, &lt, err) < 0)
    return -1;
  lt.deadline = deadline > 0 ? deadline : 0;
  return lifetime_write(dir, &lt, err);
}

char *lifetime_verdict(const struct lifetime *lt, time_t now) {
  if (lt->deadline > 0 && (long long)now >= lt->deadline) {
    struct timespec ts = {.tv_sec = (time_t)lt->deadline};
    char text[48];
    rfc3339_time(&ts, text, sizeof text);
    return xasprintf("its deadline %s passed", text);
  }
  if (lt->owner_pid <= 0)
    return NULL;
  /* A pid read in another pid namespace names another process here. */
  if (lt->owner_pidns != 0 && lt->owner_pidns != lifetime_self_pidns())
    return NULL;
  char st;
  unsigned long long start;
  if (read_stat(lt->owner_pid, &st, &start) < 0)
    return xasprintf("its owner (pid %d) is gone", (int)lt->owner_pid);
  if (start != lt->owner_start)
    return xasprintf("its owner (pid %d, started at tick %llu) is gone: pid %d is another process now",
                     (int)lt->owner_pid, lt->owner_start, (int)lt->owner_pid);
  if (st == 'Z' || st == 'X')
    return xasprintf("its owner (pid %d) is dead (a zombie its parent has not reaped)", (int)lt->owner_pid);
  return NULL;
}
