/* The caller's stdout and stderr as runsc (20240729) writes them.
 *
 * gVisor imports a host fd of a regular file as a file of its own, with
 * its own offset starting at 0, and writes with pwrite at that offset.
 * So `tollgate run ID > log` writes the container's output over the start
 * of log, whatever the shell had written there, and `> log 2>&1` (one
 * file description for both) lets stderr overwrite stdout: the output is
 * lost.  runc's container writes through the caller's description, at its
 * shared offset, and loses nothing. */
#ifndef TOLLGATE_RUNSC_STDIO_H
#define TOLLGATE_RUNSC_STDIO_H

/* Before a runsc call that hands the caller's stdout and stderr to the
 * container (create, run, exec, restore): each that is a regular file
 * open for writing, whose offset is at the file's end, is put in append
 * mode (F_SETFL O_APPEND on the caller's description).  For a writer at
 * the end, appending is exactly what writing at its offset does, and
 * Linux's pwrite appends on such a description, so every writer (the
 * container's, the shell's, a second tollgate's beside it) lands after
 * what is there.  Left so: the sandbox keeps writing after a detached
 * create returns, and so may another run sharing the description.  A
 * file whose offset is not at its end (`1<>FILE` over old content) is
 * left alone: there runsc writes from 0, as a writer at offset 0 would.
 * Best effort: a failing fcntl changes nothing and is not an error. */
void runsc_stdio_append(void);

#endif
