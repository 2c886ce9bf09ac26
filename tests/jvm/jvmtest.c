/* tests/jvm/jvmtest.c - JNI library of the JVM end-to-end tests: allocates, frees and leaks known amounts */
/* SPDX-License-Identifier: MIT */
/*
 * Loaded by JvmLeak.java with System.load. Built -O0 -g with frame
 * pointers, so each function below is a frame of its own with a file:line,
 * and -fno-plt, so every call of malloc and every &malloc reads the same
 * GOT slot: the slot heaptap rewrites while attached. jt_patched() compares
 * that slot with its value when the library was loaded, which tells the
 * Java side whether an allocation made now is recorded.
 *
 * The numbers the tests check:
 *   jt_leak_block()   mallocs JT_LEAK_SIZE bytes and never frees them
 *                     (the line marked JT_LEAK_LINE is the call site)
 *   jt_churn_block()  malloc/calloc/realloc a block, fill it, hash it, free it
 *   jt_upcall_block() mallocs JT_UPCALL_SIZE bytes and never frees them,
 *                     under a JNI upcall: Java_JvmLeak_upcall calls the Java
 *                     method JvmLeak.upcalled, which calls the native
 *                     JvmLeak.upleak (Java_JvmLeak_upleak)
 * Java recomputes every hash (JvmLeak.expect): a wrong byte is a failed
 * check of the program itself.
 */
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define JT_LEAK_SIZE 2345
#define JT_UPCALL_SIZE 3456

static void *slot_at_load;	 /* this library's malloc GOT slot at JNI_OnLoad */
static void *volatile jt_sink;	 /* the last leaked block, so no call is optimised away */

/* The value of this library's malloc GOT slot now. */
__attribute__((noinline)) static void *malloc_slot(void)
{
	void *(*volatile f)(size_t) = malloc; /* -fno-plt: a load from the GOT slot */

	return (void *)f;
}

static int jt_patched(void)
{
	return malloc_slot() != slot_at_load;
}

/* The known leak: JT_LEAK_SIZE bytes, never freed. */
__attribute__((noinline)) void *jt_leak_block(void)
{
	char *p = malloc(JT_LEAK_SIZE); /* JT_LEAK_LINE */

	if (p)
		memset(p, 0x5a, JT_LEAK_SIZE);
	return p;
}

/* The upcall's leak: JT_UPCALL_SIZE bytes, never freed. */
__attribute__((noinline)) void *jt_upcall_block(void)
{
	char *p = malloc(JT_UPCALL_SIZE);

	if (p)
		memset(p, 0x3c, JT_UPCALL_SIZE);
	return p;
}

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/* One block: allocated, filled from (seed, i), maybe grown, hashed, freed. */
__attribute__((noinline)) static uint64_t jt_churn_block(uint64_t h, int seed, int i)
{
	size_t size = 16 + (size_t)((unsigned)(seed * 131 + i * 977) % 1000u);
	unsigned char *p, *q;
	size_t j, grow = 0;

	p = i % 3 == 0 ? calloc(1, size) : malloc(size);
	if (!p)
		return 0;
	for (j = 0; j < size; j++)
		p[j] = (unsigned char)(seed + i * 7 + (int)j * 13);
	if (i % 4 == 1) {
		grow = 100;
		q = realloc(p, size + grow);
		if (!q) {
			free(p);
			return 0;
		}
		p = q;
		for (j = size; j < size + grow; j++)
			p[j] = (unsigned char)(j * 3);
	}
	h = fnv(h, p, size + grow);
	free(p);
	return h;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
	(void)vm;
	(void)reserved;
	slot_at_load = malloc_slot();
	return JNI_VERSION_1_8;
}

/* Hash of n churned blocks (JvmLeak.expect computes the same in Java). */
JNIEXPORT jlong JNICALL Java_JvmLeak_churn(JNIEnv *env, jclass cls, jint seed, jint n)
{
	uint64_t h = 1469598103934665603ULL;
	int i;

	(void)env;
	(void)cls;
	for (i = 0; i < n; i++)
		h = jt_churn_block(h, seed, i);
	return (jlong)h;
}

/* Leak n blocks; returns how many were leaked while the slot was patched. */
JNIEXPORT jint JNICALL Java_JvmLeak_leak(JNIEnv *env, jclass cls, jint n)
{
	int i, seen = 0;

	(void)env;
	(void)cls;
	for (i = 0; i < n; i++) {
		seen += jt_patched();
		jt_sink = jt_leak_block();
	}
	return seen;
}

/* Leak n blocks of JT_UPCALL_SIZE bytes (called by JvmLeak.upcalled); returns n. */
JNIEXPORT jint JNICALL Java_JvmLeak_upleak(JNIEnv *env, jclass cls, jint n)
{
	(void)env;
	(void)cls;
	for (jint i = 0; i < n; i++)
		jt_sink = jt_upcall_block();
	return n;
}

/* The JNI upcall: JvmLeak.upcalled(n) from native code; its return value, -1 if it is not found. */
JNIEXPORT jint JNICALL Java_JvmLeak_upcall(JNIEnv *env, jclass cls, jint n)
{
	jmethodID m = (*env)->GetStaticMethodID(env, cls, "upcalled", "(I)I");

	if (!m)
		return -1;
	return (*env)->CallStaticIntMethod(env, cls, m, n);
}

JNIEXPORT jboolean JNICALL Java_JvmLeak_patched(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return jt_patched() ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jint JNICALL Java_JvmLeak_leakSize(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return JT_LEAK_SIZE;
}

JNIEXPORT jint JNICALL Java_JvmLeak_tid(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return (jint)syscall(SYS_gettid);
}
