/* Loopback-only check of a container's network namespace over rtnetlink.
 *
 * The netlink socket is created inside the target namespace by a
 * short-lived thread that setns()es there: a socket stays bound to the
 * namespace it was created in, so the dump below lists that namespace's
 * links while this process never leaves its own.
 */
#include "oci/netcheck.h"

#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

struct opener {
  int nsfd;
  struct mnl_socket *nl;
  int err;
};

static void *open_in_netns(void *arg) {
  struct opener *o = arg;
  /* setns() in a thread moves only this thread (CLONE_NEWNET is per
   * thread); it ends right after, so nothing else runs in there. */
  if (setns(o->nsfd, CLONE_NEWNET) < 0) {
    o->err = errno;
    return NULL;
  }
  o->nl = mnl_socket_open(NETLINK_ROUTE);
  if (o->nl == NULL)
    o->err = errno;
  return NULL;
}

struct links {
  char others[512]; /* names that are not "lo", comma separated */
  int count;
  int index[64];    /* their interface indexes (the first 64) */
  int n_index;
};

static int link_cb(const struct nlmsghdr *nlh, void *data) {
  struct links *l = data;
  struct nlattr *attr;
  const char *name = NULL;
  mnl_attr_for_each(attr, nlh, sizeof(struct ifinfomsg)) {
    if (mnl_attr_get_type(attr) == IFLA_IFNAME && mnl_attr_validate(attr, MNL_TYPE_STRING) >= 0)
      name = mnl_attr_get_str(attr);
  }
  l->count++;
  if (name == NULL || strcmp(name, "lo") != 0) {
    const struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
    if (l->n_index < (int)(sizeof l->index / sizeof l->index[0]))
      l->index[l->n_index++] = ifi->ifi_index;
    size_t used = strlen(l->others);
    snprintf(l->others + used, sizeof l->others - used, "%s%s", used ? ", " : "", name ? name : "(unnamed)");
  }
  return MNL_CB_OK;
}

/* Open a route netlink socket inside pid's network namespace (refusing
 * the host's own), into *nl.  0 or -1 with *err. */
static int open_netns_socket(pid_t pid, struct mnl_socket **nl, tg_error **err) {
  if (pid <= 0)
    return tg_error_set(err, 0, "network check: invalid pid %d", (int)pid);
  cleanup_free char *path = xasprintf("/proc/%d/ns/net", (int)pid);
  cleanup_close int nsfd = open(path, O_RDONLY | O_CLOEXEC);
  if (nsfd < 0)
    return tg_error_set(err, errno, "network check: open %s", path);
  struct stat target, self;
  if (fstat(nsfd, &target) < 0 || stat("/proc/self/ns/net", &self) < 0)
    return tg_error_set(err, errno, "network check: stat network namespaces");
  /* The container sharing our own (the host's) namespace is the worst
   * case: fail before even listing. */
  if (target.st_dev == self.st_dev && target.st_ino == self.st_ino)
    return tg_error_set(err, 0, "container process %d shares the host network namespace; its config must have a new network namespace",
                        (int)pid);

  struct opener o = {.nsfd = nsfd, .nl = NULL, .err = 0};
  pthread_t t;
  int r = pthread_create(&t, NULL, open_in_netns, &o);
  if (r != 0)
    return tg_error_set(err, r, "network check: start thread");
  pthread_join(t, NULL);
  if (o.nl == NULL)
    return tg_error_set(err, o.err, "network check: netlink socket in the network namespace of %d", (int)pid);

  if (mnl_socket_bind(o.nl, 0, MNL_SOCKET_AUTOPID) < 0) {
    int e = errno;
    mnl_socket_close(o.nl);
    return tg_error_set(err, e, "network check: bind a netlink socket in the network namespace of %d", (int)pid);
  }
  *nl = o.nl;
  return 0;
}

/* Dump the links of the namespace nl lives in. */
static int list_links(struct mnl_socket *nl, struct links *links, tg_error **err) {
  char buf[MNL_SOCKET_BUFFER_SIZE];
  struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
  nlh->nlmsg_type = RTM_GETLINK;
  nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  unsigned seq = (unsigned)time(NULL);
  nlh->nlmsg_seq = seq;
  struct rtgenmsg *rt = mnl_nlmsg_put_extra_header(nlh, sizeof(struct rtgenmsg));
  rt->rtgen_family = AF_PACKET;
  memset(links, 0, sizeof *links);
  if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
    return tg_error_set(err, errno, "network check: rtnetlink request");
  unsigned portid = mnl_socket_get_portid(nl);
  for (;;) {
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    if (n < 0)
      return tg_error_set(err, errno, "network check: rtnetlink reply");
    int r = mnl_cb_run(buf, (size_t)n, seq, portid, link_cb, links);
    if (r == MNL_CB_STOP)
      return 0;
    if (r < 0)
      return tg_error_set(err, errno, "network check: rtnetlink reply");
  }
}

static void close_socket(struct mnl_socket **nl) {
  if (*nl != NULL)
    mnl_socket_close(*nl);
}

int oci_check_netns_loopback_only(pid_t pid, tg_error **err) {
  __attribute__((cleanup(close_socket))) struct mnl_socket *nl = NULL;
  struct links links;
  if (open_netns_socket(pid, &nl, err) < 0 || list_links(nl, &links, err) < 0)
    return -1;
  if (links.others[0] != '\0')
    return tg_error_set(err, 0, "the network namespace of container process %d has interfaces besides lo: %s; the sandbox must have no network: run the container with --network none (docker, podman), or do not join that namespace",
                        (int)pid, links.others);
  return 0;
}

int oci_netns_strip_to_loopback(pid_t pid, char **removed, tg_error **err) {
  *removed = NULL;
  __attribute__((cleanup(close_socket))) struct mnl_socket *nl = NULL;
  struct links links;
  if (open_netns_socket(pid, &nl, err) < 0 || list_links(nl, &links, err) < 0)
    return -1;
  if (links.others[0] == '\0')
    return 0;
  /* Deleting a veth end in here deletes its peer on the host too; the
   * addresses and routes go with the links.  Nothing else of the
   * client's network lives in a namespace that was created for this
   * container alone. */
  for (int i = 0; i < links.n_index; i++) {
    char buf[MNL_SOCKET_BUFFER_SIZE];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    nlh->nlmsg_type = RTM_DELLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
    nlh->nlmsg_seq = (unsigned)time(NULL) + (unsigned)i + 1;
    struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof *ifm);
    ifm->ifi_family = AF_UNSPEC;
    ifm->ifi_index = links.index[i];
    if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
      return tg_error_set(err, errno, "network: remove interface %d from the network namespace of %d", links.index[i], (int)pid);
    ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof buf);
    if (n < 0 || mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, mnl_socket_get_portid(nl), NULL, NULL) < 0)
      return tg_error_set(err, errno, "network: remove interface %d from the network namespace of %d", links.index[i], (int)pid);
  }
  *removed = xstrdup(links.others);
  /* Whatever could not be removed (or appeared meanwhile) is refused. */
  return oci_check_netns_loopback_only(pid, err);
}
