/* The grace an anomaly "stop" gives the program (docs/policy.md,
 * "Anomaly limits": stop_grace_ms): its calls are refused at once, and
 * the container is killed only when the grace has passed, so a program
 * that catches the refusal can print what it has and exit on its own.
 * One timer thread per stop, cancelled when the gate closes first (the
 * container ended within the grace). */
#ifndef TOLLGATE_STOP_GRACE_H
#define TOLLGATE_STOP_GRACE_H

struct stop_grace;

/* Call fn(ctx) once grace_ms have passed, on a thread of its own; at once,
 * on this thread, when grace_ms is 0 or no thread can be started (a stop
 * is never lost).  NULL when fn was called already. */
struct stop_grace *stop_grace_start(long long grace_ms, void (*fn)(void *ctx), void *ctx);

/* Cancel the timer (fn is not called if it has not been) and join its
 * thread.  NULL is fine. */
void stop_grace_free(struct stop_grace *s);

#endif
