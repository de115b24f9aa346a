/* What the kernel logged since a moment: /dev/kmsg read from its end.
 *
 * Some events leave no counter that outlives what they happened to: a
 * pids cgroup that refused a fork is removed by runsc within milliseconds
 * of its sandbox's death, and a watcher that was not scheduled in that
 * window never reads its pids.events.  The kernel logs such refusals
 * ("cgroup: fork rejected by pids controller in /ID", the first one of
 * each cgroup) as they happen, so the log is the record that stays.
 * Root only (CAP_SYSLOG); without it nothing is found. */
#ifndef TOLLGATE_KMSG_H
#define TOLLGATE_KMSG_H

/* /dev/kmsg opened at its end (only what is logged after this call is
 * read), or -1 when it cannot be opened. */
int kmsg_open_at_end(void);

/* Call seen(msg, ctx) for each record logged since the last call (at
 * most 10,000), msg its message without the trailing newline.  Records
 * overwritten before they were read are skipped. */
void kmsg_each_since(int fd, void (*seen)(const char *msg, void *ctx), void *ctx);

#endif
