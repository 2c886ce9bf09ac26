/* jvm/agent.c - the JVMTI agent in libheaptap_inject.so: method ids, the producer, naming frames */
/* SPDX-License-Identifier: MIT */
/*
 * heaptap (jvm/hotspot.c) asks the JVM to load the already loaded
 * libheaptap_inject.so as an agent: the JVM's attach listener thread calls
 * Agent_OnAttach, once per heaptap session. The first call takes a JVMTI
 * environment (kept for the life of the process: an agent cannot be
 * unloaded) with the line number and source file capabilities; each call
 *   - enables ClassLoad (AsyncGetCallTrace refuses to walk without it) and
 *     ClassPrepare (whose callback makes the method ids of each new class),
 *   - makes the method ids of every class loaded so far (GetClassMethods),
 *   - hands track/ the producer (xframes.c) and the process's frame table,
 *   - starts the naming thread, a daemon thread attached to the JVM
 *     ("heaptap java frames"): every 10 ms it names the table's ids not
 *     yet defined in this session (GetMethodName, GetMethodDeclaringClass,
 *     GetClassSignature, GetSourceFileName, GetLineNumberTable) and defines
 *     them with trk_xframe_define. JVMTI calls that may wait for a
 *     safepoint run there, never in an allocation hook.
 * The session's end waits (at most 200 ms, track/'s flush) until the
 * namer has defined every id handed out so far. When the session has
 * ended the thread disables both events, withdraws the producer and
 * detaches from the JVM: the JVM runs as before the attach,
 * with one JVMTI environment that has no event enabled.
 */
#include <dlfcn.h>
#include <errno.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "jvm/agent_internal.h"

#define JVM_EXPORT __attribute__((visibility("default")))
#define NAMER_POLL_MS 10
#define NAMER_START_MS 10000 /* a session that never starts: the agent gives up */
#define FLUSH_MS 200	     /* the end of a session waits this long at most for the last names */

static struct {
	pthread_mutex_t lock;
	jvmtiEnv *jvmti; /* the process's one environment, from the first attach on */
	struct jvm_hook hook;
	unsigned gen;	       /* attaches so far: a namer of an older one ends */
	pthread_t namer;
	int namer_running;
	_Atomic uint32_t named; /* the namer defined ids 1 .. named - 1 in this session */
	int layout_tried;	/* jvm_vm_read ran (its result stays for the process) */
	char layout_why[160];	/* what it missed */
} ag = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Make the method ids of cls (GetClassMethods makes them); the array is given back at once. */
static void class_ids(jvmtiEnv *jv, jclass cls)
{
	jmethodID *m = NULL;
	jint n = 0;

	if ((*jv)->GetClassMethods(jv, cls, &n, &m) == JVMTI_ERROR_NONE && m)
		(*jv)->Deallocate(jv, (unsigned char *)m);
}

static void JNICALL on_class_load(jvmtiEnv *jv, JNIEnv *env, jthread thr, jclass cls)
{
	(void)jv, (void)env, (void)thr, (void)cls;
}

static void JNICALL on_class_prepare(jvmtiEnv *jv, JNIEnv *env, jthread thr, jclass cls)
{
	(void)env, (void)thr;
	class_ids(jv, cls);
}

static int set_events(jvmtiEnv *jv, jvmtiEventMode mode)
{
	if ((*jv)->SetEventNotificationMode(jv, mode, JVMTI_EVENT_CLASS_LOAD, NULL) != JVMTI_ERROR_NONE ||
	    (*jv)->SetEventNotificationMode(jv, mode, JVMTI_EVENT_CLASS_PREPARE, NULL) != JVMTI_ERROR_NONE)
		return -EINVAL;
	return 0;
}

/* The process's JVMTI environment, capabilities and callbacks, once. 0 or -errno. */
static int env_once(JavaVM *vm)
{
	jvmtiCapabilities caps;
	jvmtiEventCallbacks cb;
	jvmtiEnv *jv;

	if (ag.jvmti)
		return 0;
	if ((*vm)->GetEnv(vm, (void **)&jv, JVMTI_VERSION_1_2) != JNI_OK)
		return -ENOTSUP;
	memset(&caps, 0, sizeof(caps));
	caps.can_get_line_numbers = 1;
	caps.can_get_source_file_name = 1;
	if ((*jv)->AddCapabilities(jv, &caps) != JVMTI_ERROR_NONE) {
		/* names without lines or files are still worth having */
		memset(&caps, 0, sizeof(caps));
	}
	memset(&cb, 0, sizeof(cb));
	cb.ClassLoad = on_class_load;
	cb.ClassPrepare = on_class_prepare;
	if ((*jv)->SetEventCallbacks(jv, &cb, (jint)sizeof(cb)) != JVMTI_ERROR_NONE)
		return -EINVAL;
	ag.jvmti = jv;
	return 0;
}

/* A handle of the libjvm.so the JavaVM's function table lives in (dlclose it), NULL if none. */
static void *libjvm(JavaVM *vm)
{
	Dl_info di;

	if (!dladdr((const void *)(*vm)->GetEnv, &di) || !di.dli_fname)
		return NULL;
	return dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

/*
 * AsyncGetCallTrace, and the frame layout the walker needs (once: it does
 * not change while the process lives). Without the layout Java frames
 * come from AsyncGetCallTrace alone; heaptap gets one line saying so.
 */
static void find_jvm(JavaVM *vm)
{
	char why[160], msg[320];
	void *h = libjvm(vm);
	int n;

	if (!h)
		return;
	ag.hook.asgct = (jvm_asgct_fn)dlsym(h, "AsyncGetCallTrace");
	if (!ag.layout_tried) {
		ag.layout_tried = 1;
		why[0] = '\0';
		if (jvm_vm_read(h, &ag.hook.layout, why, sizeof(why)) < 0)
			snprintf(ag.layout_why, sizeof(ag.layout_why), "%s", why);
	}
	dlclose(h);
	if (ag.hook.layout.ok)
		return;
	msg[0] = WIRE_LOG_INFO;
	n = snprintf(msg + 1, sizeof(msg) - 1,
		     "java frames: HotSpot's frame layout has no %s: frame kinds and the native frames "
		     "outer to Java frames are not shown",
		     ag.layout_why);
	if (n > 0)
		(void)trk_send_record(WIRE_REC_LOG, msg, strnlen(msg + 1, sizeof(msg) - 1) + 1);
}

/* The method ids of every class loaded so far. */
static void all_ids(jvmtiEnv *jv, JNIEnv *env)
{
	jclass *cls = NULL;
	jint n = 0;

	if ((*jv)->GetLoadedClasses(jv, &n, &cls) != JVMTI_ERROR_NONE || !cls)
		return;
	for (jint i = 0; i < n; i++) {
		class_ids(jv, cls[i]);
		if (env)
			(*env)->DeleteLocalRef(env, cls[i]);
	}
	(*jv)->Deallocate(jv, (unsigned char *)cls);
}

/* "Ljava/util/zip/Deflater;" -> "java.util.zip.Deflater" into out (cap bytes). Its length. */
static size_t class_name(const char *sig, char *out, size_t cap)
{
	size_t n = 0;

	if (*sig == 'L')
		sig++;
	for (; *sig && *sig != ';' && n + 1 < cap; sig++)
		out[n++] = *sig == '/' ? '.' : *sig;
	out[n] = '\0';
	return n;
}

/* The source line of bci in method (0: no line table, or a native method). */
static uint32_t line_of(jvmtiEnv *jv, jmethodID m, int32_t bci)
{
	jvmtiLineNumberEntry *t = NULL;
	jlocation best = -1;
	uint32_t line = 0;
	jint n = 0;

	if (bci < 0 || (*jv)->GetLineNumberTable(jv, m, &n, &t) != JVMTI_ERROR_NONE || !t)
		return 0;
	for (jint i = 0; i < n; i++)
		if (t[i].start_location <= bci && t[i].start_location > best) {
			best = t[i].start_location;
			line = (uint32_t)t[i].line_number;
		}
	(*jv)->Deallocate(jv, (unsigned char *)t);
	return line;
}

/* Name id (slot s) with JVMTI and define it for the session: trk_xframe_define's return. */
static int name_one(jvmtiEnv *jv, JNIEnv *env, uint32_t id, const struct jvm_slot *s)
{
	jmethodID m = (jmethodID)(uintptr_t)atomic_load(&s->method);
	int32_t key = atomic_load(&s->key), bci = jvm_key_bci(key);
	char *mname = NULL, *csig = NULL, *src = NULL, name[768];
	jclass cls = NULL;
	size_t len = 0;
	uint32_t line;
	int ret;

	if ((*jv)->GetMethodName(jv, m, &mname, NULL, NULL) != JVMTI_ERROR_NONE) {
		len = (size_t)snprintf(name, sizeof(name), "[unloaded Java method]");
		return trk_xframe_define(id, WIRE_LANG_JAVA, WIRE_XKIND_UNKNOWN, 0, name, len, "", 0);
	}
	if ((*jv)->GetMethodDeclaringClass(jv, m, &cls) == JVMTI_ERROR_NONE &&
	    (*jv)->GetClassSignature(jv, cls, &csig, NULL) == JVMTI_ERROR_NONE && csig)
		len = class_name(csig, name, sizeof(name) - 2);
	if (len)
		name[len++] = '.';
	len += (size_t)snprintf(name + len, sizeof(name) - len, "%s", mname);
	if (len >= sizeof(name))
		len = sizeof(name) - 1;
	if (cls && (*jv)->GetSourceFileName(jv, cls, &src) != JVMTI_ERROR_NONE)
		src = NULL;
	line = line_of(jv, m, bci);
	/* the kind the hook found (walk.c), part of the id */
	ret = trk_xframe_define(id, WIRE_LANG_JAVA, jvm_key_kind(key), line, name, len, src ? src : "",
				src ? strlen(src) : 0);
	if (src)
		(*jv)->Deallocate(jv, (unsigned char *)src);
	if (csig)
		(*jv)->Deallocate(jv, (unsigned char *)csig);
	(*jv)->Deallocate(jv, (unsigned char *)mname);
	if (cls)
		(*env)->DeleteLocalRef(env, cls);
	return ret;
}

/* Define every id from *done on whose slot is filled; a full queue waits for the next round. */
static void name_new(jvmtiEnv *jv, JNIEnv *env, struct jvm_table *tb, uint32_t *done)
{
	uint32_t end = atomic_load(&tb->next_id), i;

	if (end > JVM_TABLE_IDS)
		end = JVM_TABLE_IDS;
	for (; *done < end; ++*done) {
		i = atomic_load_explicit(&tb->by_id[*done], memory_order_acquire);
		if (!i)
			break; /* its hook is still filling it: next round */
		if (name_one(jv, env, *done, &tb->slot[i - 1]) == -EAGAIN)
			break;
	}
}

/* What the naming thread gets: its attach, and the session that asked for the agent (0: none yet). */
struct namer_arg {
	unsigned gen;
	uint32_t want;
};

static void *namer_main(void *arg)
{
	unsigned gen = ((struct namer_arg *)arg)->gen, waited = 0;
	uint32_t want = ((struct namer_arg *)arg)->want;
	JavaVMAttachArgs aa = { JNI_VERSION_1_6, "heaptap java frames", NULL };
	struct jvm_table *tb = ag.hook.table;
	JavaVM *vm = ag.hook.vm;
	struct timespec ts = { 0, NAMER_POLL_MS * 1000000L };
	JNIEnv *env = NULL;
	uint32_t done = 1, sess = 0, cur;

	if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void **)&env, &aa) != JNI_OK)
		env = NULL;
	while (env) {
		cur = trk_xframe_session();
		if (cur && want && cur != want)
			break; /* not the session that loaded the agent (that one ended early) */
		if (cur && cur != sess) {
			sess = cur; /* a session of its own: every id is defined again */
			done = 1;
		}
		if (cur) {
			name_new(ag.jvmti, env, tb, &done);
			atomic_store(&ag.named, done);
		}
		if (__atomic_load_n(&ag.gen, __ATOMIC_ACQUIRE) != gen || (sess && !cur) ||
		    (!sess && (waited += NAMER_POLL_MS) > NAMER_START_MS))
			break;
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&ag.lock);
	if (ag.gen == gen) {
		/* the session is over: nothing of heaptap runs in the JVM any more */
		trk_xframe_set_producer(NULL, NULL);
		trk_xframe_set_flush(NULL, NULL);
		set_events(ag.jvmti, JVMTI_DISABLE);
	}
	pthread_mutex_unlock(&ag.lock);
	if (env)
		(*vm)->DetachCurrentThread(vm);
	return NULL;
}

/*
 * track/'s flush at the end of a session, in the thread that ends it: wait
 * (FLUSH_MS at most) until the namer has defined every id handed out so
 * far, so no frame of the session's last milliseconds stays unnamed.
 */
static void flush(void *arg)
{
	struct jvm_table *tb = arg;
	struct timespec ts = { 0, 2000000 };
	uint32_t want = atomic_load(&tb->next_id);

	if (want > JVM_TABLE_IDS)
		want = JVM_TABLE_IDS;
	for (unsigned ms = 0; ms < FLUSH_MS && atomic_load(&ag.named) < want; ms += 2)
		nanosleep(&ts, NULL);
}

/* Everything but the thread, under ag.lock. 0 or -errno. */
static int arm(JavaVM *vm, JNIEnv *env)
{
	struct jvm_table *tb;
	int ret;

	ret = env_once(vm);
	if (ret < 0)
		return ret;
	if (!ag.hook.asgct)
		find_jvm(vm);
	else if (!ag.hook.layout.ok)
		find_jvm(vm); /* says again, for this session, that the layout is missing */
	if (!ag.hook.asgct)
		return -ENOSYS;
	if (!ag.hook.table) {
		tb = mmap(NULL, sizeof(*tb), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (tb == MAP_FAILED)
			return -ENOMEM;
		atomic_store(&tb->next_id, 1);
		ag.hook.table = tb;
	}
	ag.hook.vm = vm;
	if (set_events(ag.jvmti, JVMTI_ENABLE) < 0)
		return -EINVAL;
	all_ids(ag.jvmti, env);
	atomic_store(&ag.named, 0);
	trk_xframe_set_flush(flush, ag.hook.table);
	/* a producer of Java frames: heaptap's WIRE_CTL_XFRAMES may switch them off, and only them */
	ret = trk_xframe_set_producer_lang(jvm_produce, &ag.hook, WIRE_LANG_JAVA);
	if (ret < 0) {
		trk_xframe_set_flush(NULL, NULL);
		set_events(ag.jvmti, JVMTI_DISABLE);
	}
	return ret;
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved) JVM_EXPORT;
JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
	JNIEnv *env = NULL;
	unsigned gen;
	int ret;

	(void)options, (void)reserved;
	if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_6) != JNI_OK)
		env = NULL;
	pthread_mutex_lock(&ag.lock);
	gen = __atomic_add_fetch(&ag.gen, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&ag.lock);
	if (ag.namer_running) {
		pthread_join(ag.namer, NULL); /* the previous session's: it sees gen and ends */
		ag.namer_running = 0;
	}
	pthread_mutex_lock(&ag.lock);
	ret = arm(vm, env);
	if (ret == 0) {
		static struct namer_arg na; /* read by the thread only: the previous one was joined above */

		na.gen = gen;
		na.want = trk_xframe_session();
		ret = -pthread_create(&ag.namer, NULL, namer_main, &na);
		if (ret == 0)
			ag.namer_running = 1;
		else {
			trk_xframe_set_producer(NULL, NULL);
			trk_xframe_set_flush(NULL, NULL);
			set_events(ag.jvmti, JVMTI_DISABLE);
		}
	}
	pthread_mutex_unlock(&ag.lock);
	return ret == 0 ? JNI_OK : JNI_ERR;
}
