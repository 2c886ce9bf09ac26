/* jvm/jvm.h - Java frames in native stacks: HotSpot's attach handshake and the JVMTI agent */
/* SPDX-License-Identifier: MIT */
/*
 * Two halves (docs/jvm.md):
 *
 * heaptap's half (hotspot.c, linked into the heaptap command): once the
 * tracking library is loaded into a HotSpot JVM, jvm_hotspot_load asks the
 * JVM, through its own dynamic attach mechanism, to load that very library
 * as a JVMTI agent (its Agent_OnAttach). The handshake runs in a child
 * process that has dropped to the JVM's user, with a deadline; it trusts
 * nothing the JVM or its /tmp say beyond what it checks.
 *
 * The target's half (agent.c and xframes.c, built into
 * libheaptap_inject.so when the JDK's jvmti.h is found at build time): the
 * agent makes method ids for every loaded class, hands track/ a producer
 * that replaces the [frames cut] end of a stack by the Java frames
 * AsyncGetCallTrace finds from the thread's last Java frame, and names those
 * frames (class, method, file, line) in a thread of its own, outside the
 * allocation hooks. It goes inert when the session ends and is reused by
 * the next one.
 */
#ifndef HEAPTAP_JVM_H
#define HEAPTAP_JVM_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

/* How long heaptap waits for the JVM's attach listener and the agent's answer, at most. */
#define JVM_ATTACH_MS 5000
/* Bytes of the JVM's answer read at most (the rest is ignored). */
#define JVM_REPLY_MAX 4096

/* What jvm_hotspot_probe found in the process. */
enum jvm_kind {
	JVM_NONE = 0,	 /* no JVM in it (libjvm.so not mapped) */
	JVM_HOTSPOT = 1, /* libjvm.so of HotSpot */
	JVM_OTHER = 2,	 /* a JVM that is not HotSpot (OpenJ9's libj9vm) */
};

/*
 * jvm_hotspot_probe - whether pid runs a JVM, from /proc/PID/maps, and the
 * path the process maps libname (e.g. "libheaptap_inject.so") from, as its
 * loader named it, into lib (empty when libname is not mapped or its file
 * is gone). Reads /proc only.
 */
enum jvm_kind jvm_hotspot_probe(pid_t pid, const char *libname, char *lib, size_t cap);

/*
 * jvm_hotspot_load - ask HotSpot JVM pid to load lib (a path the process
 * already maps, so the JVM's dlopen finds it loaded) as a JVMTI agent, with
 * the dynamic attach mechanism: the .attach_pid<NSPID> file in the JVM's
 * /tmp and SIGQUIT start its attach listener if the /tmp/.java_pid<NSPID>
 * socket is not there yet; the socket's peer must be that process and
 * user (SO_PEERCRED); then "load lib true" is sent and the answer read
 * (at most JVM_REPLY_MAX bytes). Everything that touches the JVM or its
 * files runs in a child process with the JVM's uid and gid, no
 * supplementary groups and no other descriptor, within JVM_ATTACH_MS; *stop
 * turning nonzero ends the wait early. Returns 0 when the agent started,
 * else -errno with a one-line reason (printable: bytes from the JVM are
 * escaped) in why: -EPERM the JVM refuses attaching
 * (-XX:+DisableAttachMechanism), -ETIMEDOUT no attach listener or no answer
 * in time, -EPROTO a refusal or an answer that is not the protocol's,
 * -ENOENT no such JVM. The JVM keeps its attach listener running
 * afterwards, as after any jcmd.
 */
int jvm_hotspot_load(pid_t pid, const char *lib, const volatile sig_atomic_t *stop, char *why,
		     size_t whylen);

/*
 * jvm_reply_parse - the JVM's answer to "load" (len bytes of buf, not
 * terminated): 0 when the command ran and the agent returned 0, else
 * -EPROTO with what the JVM said, escaped, in why. Pure: for unit tests.
 */
int jvm_reply_parse(const char *buf, size_t len, char *why, size_t whylen);

#endif /* HEAPTAP_JVM_H */
