/* The pod network's egress refusal: see oci/podnet.h. */
#include "oci/podnet.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/util.h"

#ifndef NSIO
#define NSIO 0xb7
#endif
#ifndef NS_GET_NSTYPE
#define NS_GET_NSTYPE _IO(NSIO, 0x3)
#endif

#define LISTING_MAX (64 * 1024)

int oci_podnet_ports(const json_t *config, struct podnet_ports *out, tg_error **err) {
  out->n = 0;
  const json_t *v = json_object_get(json_object_get(config, "annotations"), PODNET_PORTS_ANNOTATION);
  if (v == NULL)
    return 0;
  const char *s = json_string_value(v);
  if (s == NULL)
    return tg_error_set(err, 0, "annotation " PODNET_PORTS_ANNOTATION " must be a string of ports, e.g. \"8080,9090\"");
  const char *p = s;
  while (*p != '\0') {
    char *end = NULL;
    errno = 0;
    long port = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1;
    if (port < 1 || port > 65535 || errno != 0 || (end && *end != ',' && *end != '\0'))
      return tg_error_set(err, 0, "annotation " PODNET_PORTS_ANNOTATION "=\"%s\": each port must be a number from 1 to 65535, separated by commas (e.g. \"8080,9090\")", s);
    if (out->n == PODNET_MAX_PORTS)
      return tg_error_set(err, 0, "annotation " PODNET_PORTS_ANNOTATION "=\"%s\" declares more than %d ports: declare only the ports the pod serves", s, PODNET_MAX_PORTS);
    out->port[out->n++] = (unsigned short)port;
    p = *end == ',' ? end + 1 : end;
    if (*end == ',' && *p == '\0')
      return tg_error_set(err, 0, "annotation " PODNET_PORTS_ANNOTATION "=\"%s\" ends with a comma: remove it", s);
  }
  return 0;
}

char *oci_podnet_netns_path(const json_t *config) {
  const json_t *nss = json_get_path(config, "linux.namespaces");
  for (size_t i = 0; i < json_array_len(nss); i++) {
    const json_t *ns = json_array_get(nss, i);
    const char *type = json_string_value(json_object_get(ns, "type"));
    const char *path = json_string_value(json_object_get(ns, "path"));
    if (type != NULL && strcmp(type, "network") == 0 && path != NULL && path[0] != '\0')
      return xstrdup(path);
  }
  return NULL;
}

int oci_podnet_open(const char *path, int *fd, tg_error **err) {
  *fd = -1;
  cleanup_close int nsfd = open(path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0)
    return tg_error_set(err, errno, "the pod's network namespace %s", path);
  struct statfs fs;
  if (fstatfs(nsfd, &fs) < 0 || fs.f_type != NSFS_MAGIC || ioctl(nsfd, NS_GET_NSTYPE) != CLONE_NEWNET)
    return tg_error_set(err, 0, "the pod's network namespace %s is not a network namespace", path);
  /* The host's own namespace (a pod with hostNetwork) is never made the
   * pod's: the refusal would be loaded into the host's tables. */
  struct stat target, self;
  if (fstat(nsfd, &target) < 0 || stat("/proc/self/ns/net", &self) < 0)
    return tg_error_set(err, errno, "stat the network namespaces");
  if (target.st_dev == self.st_dev && target.st_ino == self.st_ino)
    return tg_error_set(err, 0, "the pod's network namespace %s is the host's: a hostNetwork pod cannot have the pod network with egress refused; give the pod a network of its own", path);
  *fd = nsfd;
  nsfd = -1;
  return 0;
}

/* The iptables binary of the host (iptables-nft or legacy, whichever the
 * node uses: the same as its kube-proxy's). */
static const char *xtables_path(const char *name) {
  static const char *const dirs[] = {"/usr/sbin", "/sbin", "/usr/bin", "/bin"};
  static char buf[64];
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    snprintf(buf, sizeof buf, "%s/%s", dirs[i], name);
    if (access(buf, X_OK) == 0)
      return buf;
  }
  return NULL;
}

/* Run argv inside the network namespace nsfd with input on its stdin;
 * *out gets its stdout (owned, bounded) when out is not NULL.  0 when it
 * exits 0; -1 with *err. */
static int run_in_netns(int nsfd, char *const argv[], const char *input, char **out, tg_error **err) {
  int in[2], o[2];
  if (pipe2(in, O_CLOEXEC) < 0)
    return tg_error_set(err, errno, "pipe");
  if (pipe2(o, O_CLOEXEC) < 0) {
    close(in[0]);
    close(in[1]);
    return tg_error_set(err, errno, "pipe");
  }
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(in[0]), close(in[1]), close(o[0]), close(o[1]);
    return tg_error_set(err, e, "fork");
  }
  if (pid == 0) {
    /* Only async-signal-safe calls until the exec. */
    /* A listing is compared byte for byte: stderr (a warning about the
     * other iptables backend's tables, say) stays out of it. */
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (setns(nsfd, CLONE_NEWNET) < 0 || dup2(in[0], 0) < 0 || dup2(o[1], 1) < 0 ||
        dup2(out != NULL && devnull >= 0 ? devnull : o[1], 2) < 0)
      _exit(126);
    execv(argv[0], argv);
    _exit(127);
  }
  close(in[0]);
  close(o[1]);
  size_t len = input ? strlen(input) : 0;
  for (size_t done = 0; done < len;) {
    ssize_t n = write(in[1], input + done, len - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += (size_t)n;
  }
  close(in[1]);
  char *buf = xmalloc(LISTING_MAX + 1);
  size_t used = 0;
  for (;;) {
    ssize_t n = read(o[0], buf + used, LISTING_MAX - used);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    used += (size_t)n;
    if (used == LISTING_MAX)
      break;
  }
  buf[used] = '\0';
  close(o[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    tg_error_set(err, 0, "%s in the pod's network namespace failed (status %d)%s%s", argv[0], status,
                 used ? ": " : "", buf);
    free(buf);
    return -1;
  }
  if (out)
    *out = buf;
  else
    free(buf);
  return 0;
}

/* The filter table that refuses egress: nothing out but lo and the replies
 * of connections that came in to a declared port.  FORWARD drops too: a
 * pod routes nothing. */
static char *table(const struct podnet_ports *p, bool listing) {
  char ports[16 * 7] = "";
  size_t used = 0;
  for (size_t i = 0; i < p->n; i++)
    used += (size_t)snprintf(ports + used, sizeof ports - used, "%s%u", i ? "," : "", p->port[i]);
  cleanup_free char *reply =
      p->n ? xasprintf("-A OUTPUT -p tcp -m conntrack --ctstate ESTABLISHED -m multiport --sports %s -j ACCEPT\n", ports)
           : xstrdup("");
  if (listing)
    return xasprintf("-P INPUT ACCEPT\n-P FORWARD DROP\n-P OUTPUT DROP\n-A OUTPUT -o lo -j ACCEPT\n%s", reply);
  return xasprintf("*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:OUTPUT DROP [0:0]\n"
                   "-A OUTPUT -o lo -j ACCEPT\n%sCOMMIT\n",
                   reply);
}

static int listing_of(int nsfd, char **out, tg_error **err) {
  *out = NULL;
  const char *v4 = xtables_path("iptables");
  cleanup_free char *v4copy = v4 ? xstrdup(v4) : NULL;
  const char *v6 = xtables_path("ip6tables");
  cleanup_free char *v6copy = v6 ? xstrdup(v6) : NULL;
  if (v4copy == NULL || v6copy == NULL)
    return tg_error_set(err, 0, "iptables and ip6tables are needed for the pod network (host config pod_network_roots) and were not found in /usr/sbin, /sbin, /usr/bin or /bin: install iptables on the node");
  char w[] = "-w", S[] = "-S";
  char *a4[] = {v4copy, w, S, NULL}, *a6[] = {v6copy, w, S, NULL};
  cleanup_free char *l4 = NULL, *l6 = NULL;
  if (run_in_netns(nsfd, a4, NULL, &l4, err) < 0 || run_in_netns(nsfd, a6, NULL, &l6, err) < 0)
    return -1;
  *out = xasprintf("%s%s", l4, l6);
  return 0;
}

int oci_podnet_refuse_egress(int nsfd, const struct podnet_ports *ports, char **listing, tg_error **err) {
  *listing = NULL;
  const char *r4 = xtables_path("iptables-restore");
  cleanup_free char *r4copy = r4 ? xstrdup(r4) : NULL;
  const char *r6 = xtables_path("ip6tables-restore");
  cleanup_free char *r6copy = r6 ? xstrdup(r6) : NULL;
  if (r4copy == NULL || r6copy == NULL)
    return tg_error_set(err, 0, "iptables-restore and ip6tables-restore are needed for the pod network (host config pod_network_roots) and were not found: install iptables on the node");
  cleanup_free char *rules = table(ports, false);
  /* Without --noflush the table is replaced whole, in one transaction:
   * whatever was there before (nothing, in a namespace the CNI plugin
   * made) is gone. */
  char w[] = "-w";
  char *a4[] = {r4copy, w, NULL}, *a6[] = {r6copy, w, NULL};
  if (run_in_netns(nsfd, a4, rules, NULL, err) < 0 || run_in_netns(nsfd, a6, rules, NULL, err) < 0)
    return tg_error_wrap(err, "refusing egress in the pod's network namespace");
  cleanup_free char *one = table(ports, true);
  cleanup_free char *want = xasprintf("%s%s", one, one);
  if (oci_podnet_check(nsfd, want, err) < 0)
    return -1;
  *listing = xstrdup(want);
  return 0;
}

int oci_podnet_check(int nsfd, const char *want, tg_error **err) {
  cleanup_free char *got = NULL;
  if (listing_of(nsfd, &got, err) < 0)
    return tg_error_wrap(err, "checking the pod network's egress refusal");
  if (strcmp(got, want) != 0)
    return tg_error_set(err, 0, "the pod's network namespace does not refuse egress as tollgate set it: its filter tables are\n%swhere tollgate loaded\n%s; remove the pod and create it again", got, want);
  return 0;
}

void oci_podnet_apply(json_t *config, const char *path) {
  json_t *nss = json_object_ensure_array(json_object_ensure_object(config, "linux"), "namespaces");
  bool have = false;
  for (size_t i = 0; i < json_array_len(nss); i++) {
    json_t *ns = json_array_get(nss, i);
    const char *type = json_string_value(json_object_get(ns, "type"));
    if (type != NULL && strcmp(type, "network") == 0) {
      json_object_set(ns, "path", json_new_string(path));
      have = true;
    }
  }
  if (!have) {
    json_t *ns = json_new_object();
    json_object_set(ns, "type", json_new_string("network"));
    json_object_set(ns, "path", json_new_string(path));
    json_array_append(nss, ns);
  }
}
