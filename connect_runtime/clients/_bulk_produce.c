/*
 * connect_runtime.clients._bulk_produce: produce a stretch of consumed messages in one call.
 *
 * Why: a replicating task produces every consumed record unchanged. In Python that is one loop
 * iteration per record: four accessor calls on the Message and a Producer.produce call that parses
 * eight arguments, all holding the GIL. At 100-byte records that loop, not librdkafka or the brokers,
 * sets the pace of a task. This module runs the same loop in C, and calls librdkafka without the GIL,
 * so the client's own threads and the process's other Python threads run meanwhile.
 *
 * What it does and does not do (the Python side, bulk_produce.py, decides when to use it):
 *   - it produces messages[start:stop] to one topic and partition, each with its own key, value,
 *     timestamp and headers, exactly what confluent-kafka's Producer.produce(topic, value, key,
 *     partition, None, None, timestamp, headers) would send, through the same librdkafka handle;
 *   - no record carries a delivery callback (the caller produces the records that need one itself);
 *   - it stops at the first record it cannot produce (a full queue, an error, anything unexpected)
 *     and returns how many it produced: the caller produces that record through Producer.produce,
 *     which raises what it raised before. So every error keeps its Python path.
 *
 * How it reaches librdkafka and confluent-kafka's objects, and what each guard is for:
 *   - librdkafka's functions are looked up through confluent_kafka.cimpl's own library handle (bind():
 *     dlopen of cimpl's file with RTLD_NOLOAD, then dlsym, which searches cimpl's dependencies), so they
 *     are those of the librdkafka cimpl was linked against and loaded, never another copy in the process;
 *     bind() returns that library's version, which the Python side compares with
 *     confluent_kafka.libversion() before anything is produced.
 *   - the producer's rd_kafka_t pointer is read from confluent-kafka's Producer object, whose C struct
 *     (confluent_kafka.h, struct Handle) starts with PyObject_HEAD and then that pointer. That struct is
 *     private to confluent-kafka, so the Python side binds only for the confluent-kafka versions whose
 *     header was checked (a version gate in bulk_produce.py); outside them this code is never called.
 *   - the Message accessors are called through their method table entries, not by reading Message's
 *     fields, so Message's layout is not assumed.
 *   - a span runs without the GIL, when any other thread may run: it holds its own reference to the list
 *     and to each message it reads, and re-reads the list's length before each record, so a list another
 *     thread shrinks is never read past its end;
 *   - the producer's handle is used without the GIL, when Producer.close() on another thread could
 *     destroy it: every span holds the producer's Gate (a lock) from before it reads the handle until it
 *     stops using it, and the producer's close() closes the Gate first (connect_runtime.clients.registry
 *     .TrackedProducer), which waits for a running span and turns later ones away. The caller's reference
 *     to the producer (bulk_produce.py binds it into the span callable) keeps the object itself alive.
 *
 * The CPU spent without the GIL (count_released_cpu(), released_cpu_ns()): how many tasks one process can
 * run side by side depends on the share of a record's CPU that holds the GIL (Amdahl: at most
 * 1 / (s + (1 - s) / N) times one task). Only this module knows where its released sections begin and end,
 * so it measures them: when counting is on, each released section reads the thread's CPU clock on entry
 * and exit and adds the difference to a process-wide sum (bench/scale.py gil reads it). Off by default:
 * one read costs about 0.3 us (a system call: the kernel has no vDSO path for a thread's CPU clock), and
 * at one record per span the two reads would add half the span's own cost; on, they are two per chunk.
 * The few librdkafka declarations needed are below; they are its stable C ABI (rdkafka.h).
 *
 * CPython only, with the GIL: the code relies on the GIL to read lists and to order the Gate's fields,
 * and on CPython's method descriptors. setup.py builds it only there, and the #errors below stop a build
 * elsewhere (an optional extension that fails to build is skipped, and the Python loop produces).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#if defined(PYPY_VERSION)
#error "CPython only: PyPy has no CPython method descriptors or object layout"
#endif
#if defined(Py_GIL_DISABLED)
#error "needs the GIL: lists and the Gate are read under it"
#endif

/* ---- librdkafka's ABI, as declared in rdkafka.h (v2.x) ----------------------------------------- */
typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
typedef int rd_kafka_resp_err_t;

enum { /* rd_kafka_vtype_t */
        VTYPE_END = 0,
        VTYPE_RKT = 2,
        VTYPE_PARTITION = 3,
        VTYPE_VALUE = 4,
        VTYPE_KEY = 5,
        VTYPE_MSGFLAGS = 7,
        VTYPE_TIMESTAMP = 8,
        VTYPE_HEADERS = 10,
};
#define MSG_F_COPY 0x2
#define KAFKA_PRODUCER 0

typedef rd_kafka_resp_err_t (*producev_fn)(rd_kafka_t *, ...);
typedef rd_kafka_topic_t *(*topic_new_fn)(rd_kafka_t *, const char *, void *);
typedef void (*topic_destroy_fn)(rd_kafka_topic_t *);
typedef rd_kafka_headers_t *(*headers_new_fn)(size_t);
typedef void (*headers_destroy_fn)(rd_kafka_headers_t *);
typedef rd_kafka_resp_err_t (*header_add_fn)(rd_kafka_headers_t *, const char *, ssize_t, const void *, ssize_t);
typedef const char *(*name_fn)(const rd_kafka_t *);
typedef int (*type_fn)(const rd_kafka_t *);
typedef int (*version_fn)(void);

static struct {
        producev_fn producev;
        topic_new_fn topic_new;
        topic_destroy_fn topic_destroy;
        headers_new_fn headers_new;
        headers_destroy_fn headers_destroy;
        header_add_fn header_add;
        name_fn name;
        type_fn type;
        version_fn version;
} rk_api;

/* ---- confluent-kafka's objects ------------------------------------------------------------------ */
typedef struct {
        PyObject_HEAD rd_kafka_t *rk; /* the head of confluent_kafka.h's struct Handle */
} HandleHead;

static PyTypeObject *producer_type;
static PyTypeObject *message_type;
static PyCFunction m_value, m_key, m_timestamp, m_headers, m_topic, m_partition, m_offset, m_error;

/* How many records are gathered (with the GIL) before they are produced (without it). */
#define CHUNK 256

/* Whether released sections are timed, and their CPU summed over every thread. Both are read and written
 * with the GIL held only, so they need no atomics: a section's own time is kept on its stack until the
 * GIL is back. */
static int count_released;
static unsigned long long released_ns;

/* The calling thread's CPU time; 0 if the clock cannot be read (a section then adds nothing sensible,
 * but never a negative amount: see released_since). */
static unsigned long long thread_cpu_ns(void) {
        struct timespec ts;
        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
                return 0;
        return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

static unsigned long long released_since(unsigned long long from) {
        unsigned long long now = thread_cpu_ns();
        return now > from ? now - from : 0;
}

typedef struct {
        PyObject *value; /* owned references, released after produce (librdkafka copies) */
        PyObject *key;
        int64_t timestamp;
        rd_kafka_headers_t *headers; /* passed to librdkafka on success, destroyed otherwise */
} Item;

/* ---- Gate: what keeps a producer's handle alive while spans use it ------------------------------ */
typedef struct {
        PyObject_HEAD PyThread_type_lock lock; /* held by a running span, and by close() while it closes */
        int closed;                            /* set by close(): no span starts after it */
        unsigned long owner;                   /* the thread whose span holds the lock (0: none) */
} Gate;

static PyTypeObject GateType;

static PyObject *gate_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
        Gate *self;
        if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs)))
                return PyErr_Format(PyExc_TypeError, "Gate() takes no arguments");
        if (!(self = (Gate *)type->tp_alloc(type, 0)))
                return NULL;
        if (!(self->lock = PyThread_allocate_lock())) {
                Py_DECREF(self);
                return PyErr_NoMemory();
        }
        return (PyObject *)self;
}

static void gate_dealloc(Gate *self) {
        if (self->lock) /* nobody holds it: a span and close() hold a reference to the Gate meanwhile */
                PyThread_free_lock(self->lock);
        Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Take the lock with the GIL held: at once when it is free, otherwise waiting without the GIL (the
 * holder may need the GIL to finish). */
static void gate_acquire(Gate *gate) {
        if (!PyThread_acquire_lock(gate->lock, NOWAIT_LOCK)) {
                Py_BEGIN_ALLOW_THREADS
                PyThread_acquire_lock(gate->lock, WAIT_LOCK);
                Py_END_ALLOW_THREADS
        }
}

static PyObject *gate_close(Gate *self, PyObject *unused) {
        if (self->owner == PyThread_get_thread_ident())
                /* A finalizer run by a span's own allocation (the garbage collector) would wait for itself. */
                return PyErr_Format(PyExc_RuntimeError, "the producer cannot be closed from inside its own span");
        Py_INCREF(self);
        gate_acquire(self);
        self->closed = 1;
        PyThread_release_lock(self->lock);
        Py_DECREF(self);
        Py_RETURN_NONE;
}

static PyObject *gate_get_closed(Gate *self, void *unused) { return PyBool_FromLong(self->closed); }

static PyMethodDef gate_methods[] = {
    {"close", (PyCFunction)gate_close, METH_NOARGS,
     "Wait for a running span to end; later spans produce nothing (the producer is being closed)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef gate_getset[] = {
    {"closed", (getter)gate_get_closed, NULL, "Whether close() was called.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject GateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "connect_runtime.clients._bulk_produce.Gate",
    .tp_basicsize = sizeof(Gate),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Gate(): held by each span while it uses a producer's handle; close() waits for it.",
    .tp_new = gate_new,
    .tp_dealloc = (destructor)gate_dealloc,
    .tp_methods = gate_methods,
    .tp_getset = gate_getset,
};

/* ---- binding ------------------------------------------------------------------------------------ */
static int lookup_method(PyTypeObject *type, const char *name, PyCFunction *out) {
        PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
        if (!descr)
                return -1;
        if (!PyObject_TypeCheck(descr, &PyMethodDescr_Type) ||
            !(((PyMethodDescrObject *)descr)->d_method->ml_flags & METH_NOARGS)) {
                Py_DECREF(descr);
                PyErr_Format(PyExc_TypeError, "%s.%s is not a C method without arguments", type->tp_name, name);
                return -1;
        }
        *out = ((PyMethodDescrObject *)descr)->d_method->ml_meth;
        Py_DECREF(descr); /* the type keeps the descriptor */
        return 0;
}

static void *symbol(void *lib, const char *path, const char *name) {
        void *sym = dlsym(lib, name);
        if (!sym)
                PyErr_Format(PyExc_ImportError, "no %s through %s", name, path);
        return sym;
}

/* bind(cimpl_path, Producer, Message) -> librdkafka's version number */
static PyObject *bind(PyObject *self, PyObject *args) {
        const char *path;
        PyObject *ptype, *mtype;
        void *lib;
        if (!PyArg_ParseTuple(args, "sO!O!", &path, &PyType_Type, &ptype, &PyType_Type, &mtype))
                return NULL;
        /* RTLD_NOLOAD: the handle of the cimpl module Python already loaded, never a second copy. dlsym
         * through it searches cimpl and then the libraries it depends on, in load order: the rd_kafka_*
         * functions found are those cimpl itself calls. The handle is never closed: cimpl stays loaded for
         * the life of the process, and closing only drops the reference dlopen added. */
        lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (!lib)
                return PyErr_Format(PyExc_ImportError, "%s is not loaded (%s)", path, dlerror());
        if (!(rk_api.producev = (producev_fn)symbol(lib, path, "rd_kafka_producev")) ||
            !(rk_api.topic_new = (topic_new_fn)symbol(lib, path, "rd_kafka_topic_new")) ||
            !(rk_api.topic_destroy = (topic_destroy_fn)symbol(lib, path, "rd_kafka_topic_destroy")) ||
            !(rk_api.headers_new = (headers_new_fn)symbol(lib, path, "rd_kafka_headers_new")) ||
            !(rk_api.headers_destroy = (headers_destroy_fn)symbol(lib, path, "rd_kafka_headers_destroy")) ||
            !(rk_api.header_add = (header_add_fn)symbol(lib, path, "rd_kafka_header_add")) ||
            !(rk_api.name = (name_fn)symbol(lib, path, "rd_kafka_name")) ||
            !(rk_api.type = (type_fn)symbol(lib, path, "rd_kafka_type")) ||
            !(rk_api.version = (version_fn)symbol(lib, path, "rd_kafka_version"))) {
                rk_api.producev = NULL;
                return NULL;
        }
        if (lookup_method((PyTypeObject *)mtype, "value", &m_value) ||
            lookup_method((PyTypeObject *)mtype, "key", &m_key) ||
            lookup_method((PyTypeObject *)mtype, "timestamp", &m_timestamp) ||
            lookup_method((PyTypeObject *)mtype, "headers", &m_headers) ||
            lookup_method((PyTypeObject *)mtype, "topic", &m_topic) ||
            lookup_method((PyTypeObject *)mtype, "partition", &m_partition) ||
            lookup_method((PyTypeObject *)mtype, "offset", &m_offset) ||
            lookup_method((PyTypeObject *)mtype, "error", &m_error)) {
                rk_api.producev = NULL;
                return NULL;
        }
        Py_INCREF(ptype);
        Py_INCREF(mtype);
        Py_XSETREF(producer_type, (PyTypeObject *)ptype);
        Py_XSETREF(message_type, (PyTypeObject *)mtype);
        return PyLong_FromLong(rk_api.version());
}

/* The producer's handle (NULL once closed), or NULL with an exception. Called with the GIL held. */
static rd_kafka_t *handle_of(PyObject *producer) {
        if (!rk_api.producev || !producer_type)
                return (rd_kafka_t *)PyErr_Format(PyExc_RuntimeError, "bind() was not called");
        if (!PyObject_TypeCheck(producer, producer_type))
                return (rd_kafka_t *)PyErr_Format(PyExc_TypeError, "not a %s", producer_type->tp_name);
        return ((HandleHead *)producer)->rk;
}

/* client_name(producer) -> librdkafka's name of the client (a check that the handle is what it seems) */
static PyObject *client_name(PyObject *self, PyObject *producer) {
        rd_kafka_t *rk = handle_of(producer);
        if (!rk)
                return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        if (rk_api.type(rk) != KAFKA_PRODUCER)
                return Py_NewRef(Py_None);
        return PyUnicode_FromString(rk_api.name(rk));
}

/* ---- producing ---------------------------------------------------------------------------------- */
static rd_kafka_headers_t *headers_of(PyObject *list, int *ok) {
        /* Message.headers(): None, or a list of (str, bytes | None). The list is the Message's own new
         * one, so nothing else changes it meanwhile. */
        rd_kafka_headers_t *hdrs;
        Py_ssize_t i, n;
        *ok = 1;
        if (list == Py_None)
                return NULL;
        if (!PyList_CheckExact(list)) {
                *ok = 0;
                return NULL;
        }
        n = PyList_GET_SIZE(list);
        hdrs = rk_api.headers_new((size_t)n);
        for (i = 0; i < n; i++) {
                PyObject *pair = PyList_GET_ITEM(list, i), *name, *value;
                const char *cname, *cvalue = NULL;
                Py_ssize_t name_len, value_len = 0;
                if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
                        goto bad;
                name = PyTuple_GET_ITEM(pair, 0);
                value = PyTuple_GET_ITEM(pair, 1);
                if (!PyUnicode_Check(name) || !(cname = PyUnicode_AsUTF8AndSize(name, &name_len)))
                        goto bad;
                if (value != Py_None) {
                        if (!PyBytes_CheckExact(value))
                                goto bad;
                        cvalue = PyBytes_AS_STRING(value);
                        value_len = PyBytes_GET_SIZE(value);
                }
                if (rk_api.header_add(hdrs, cname, name_len, cvalue, value_len))
                        goto bad;
        }
        return hdrs;
bad:
        PyErr_Clear();
        rk_api.headers_destroy(hdrs);
        *ok = 0;
        return NULL;
}

/* One record's parts, or 0 when it is not a plain consumed record (the Python path takes it). The
 * caller holds a reference to m: the accessors allocate, and a collection they start may run any
 * finalizer, one that empties the list included. */
static int gather(PyObject *m, Item *item) {
        PyObject *ts = NULL, *hdrs = NULL;
        int ok;
        item->value = item->key = NULL;
        item->headers = NULL;
        if (Py_TYPE(m) != message_type)
                return 0;
        if (!(item->value = m_value(m, NULL)) || !(item->key = m_key(m, NULL)))
                goto bad;
        if ((item->value != Py_None && !PyBytes_CheckExact(item->value)) ||
            (item->key != Py_None && !PyBytes_CheckExact(item->key)))
                goto bad;
        if (!(ts = m_timestamp(m, NULL)) || !PyTuple_CheckExact(ts) || PyTuple_GET_SIZE(ts) != 2)
                goto bad;
        item->timestamp = PyLong_AsLongLong(PyTuple_GET_ITEM(ts, 1));
        if (item->timestamp == -1 && PyErr_Occurred())
                goto bad;
        if (item->timestamp < 0)
                item->timestamp = 0; /* as the Python path: ts if ts > 0 else 0 */
        Py_CLEAR(ts);
        if (!(hdrs = m_headers(m, NULL)))
                goto bad;
        item->headers = headers_of(hdrs, &ok);
        Py_DECREF(hdrs);
        if (!ok)
                goto bad;
        return 1;
bad:
        PyErr_Clear();
        Py_XDECREF(ts);
        Py_CLEAR(item->value);
        Py_CLEAR(item->key);
        return 0;
}

static void bytes_of(PyObject *obj, const char **ptr, size_t *len) {
        if (obj == Py_None) {
                *ptr = NULL;
                *len = 0;
        } else {
                *ptr = PyBytes_AS_STRING(obj);
                *len = (size_t)PyBytes_GET_SIZE(obj);
        }
}

/* The span itself, with the Gate held and the handle open. */
static Py_ssize_t produce_held(rd_kafka_t *rk, PyObject *messages, Py_ssize_t start, Py_ssize_t stop,
                               const char *topic, int32_t part, long long *nbytes) {
        rd_kafka_topic_t *rkt;
        Py_ssize_t pos = start, n, done, k;
        int more = 1, timed = count_released;
        unsigned long long released_from = 0, released_for = 0;
        Item items[CHUNK];

        if (!(rkt = rk_api.topic_new(rk, topic, NULL)))
                return 0;
        while (more) {
                rd_kafka_resp_err_t err = 0;
                n = 0;
                /* The list's length is read again before every record: other threads ran while the
                 * previous chunk was produced without the GIL, and a finalizer may run inside gather(). */
                while (n < CHUNK && pos + n < stop && pos + n < PyList_GET_SIZE(messages)) {
                        PyObject *m = PyList_GET_ITEM(messages, pos + n);
                        int ok;
                        Py_INCREF(m);
                        ok = gather(m, &items[n]);
                        Py_DECREF(m);
                        if (!ok) {
                                more = 0;
                                break;
                        }
                        n++;
                }
                if (n == 0)
                        break;
                done = 0;
                Py_BEGIN_ALLOW_THREADS
                if (timed)
                        released_from = thread_cpu_ns();
                for (; done < n; done++) {
                        const char *value, *key;
                        size_t value_len, key_len;
                        bytes_of(items[done].value, &value, &value_len);
                        bytes_of(items[done].key, &key, &key_len);
                        err = rk_api.producev(rk, VTYPE_MSGFLAGS, MSG_F_COPY, VTYPE_RKT, rkt, VTYPE_PARTITION, part,
                                              VTYPE_KEY, key, key_len, VTYPE_VALUE, value, value_len,
                                              VTYPE_TIMESTAMP, items[done].timestamp, VTYPE_HEADERS,
                                              items[done].headers, VTYPE_END);
                        if (err)
                                break;
                        *nbytes += (long long)value_len;
                }
                if (timed)
                        released_for = released_since(released_from);
                Py_END_ALLOW_THREADS
                released_ns += released_for;
                for (k = 0; k < n; k++) {
                        Py_DECREF(items[k].value);
                        Py_DECREF(items[k].key);
                        if (k >= done && items[k].headers)
                                rk_api.headers_destroy(items[k].headers);
                }
                pos += done;
                if (done < n)
                        more = 0;
        }
        rk_api.topic_destroy(rkt);
        return pos - start;
}

/* produce_span(gate, producer, messages, start, stop, topic, partition) -> (produced, value bytes) */
static PyObject *produce_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        Gate *gate;
        PyObject *producer, *messages;
        Py_ssize_t start, stop, produced = 0;
        const char *topic;
        long part;
        long long nbytes = 0;
        rd_kafka_t *rk;

        if (nargs != 7)
                return PyErr_Format(PyExc_TypeError, "produce_span takes 7 arguments (%zd given)", nargs);
        if (!PyObject_TypeCheck(args[0], &GateType))
                return PyErr_Format(PyExc_TypeError, "not a Gate");
        gate = (Gate *)args[0];
        producer = args[1];
        messages = args[2];
        if (!PyList_CheckExact(messages))
                return PyErr_Format(PyExc_TypeError, "messages must be a list");
        start = PyLong_AsSsize_t(args[3]);
        stop = PyLong_AsSsize_t(args[4]);
        topic = PyUnicode_AsUTF8(args[5]);
        part = PyLong_AsLong(args[6]);
        if (PyErr_Occurred())
                return NULL;
        if (part < INT32_MIN || part > INT32_MAX)
                return PyErr_Format(PyExc_OverflowError, "partition %ld out of range", part);
        if (start < 0 || start >= stop || start >= PyList_GET_SIZE(messages))
                return Py_BuildValue("(nL)", (Py_ssize_t)0, 0LL);
        if (gate->owner == PyThread_get_thread_ident())
                /* A span started by a finalizer inside this thread's own span: the Python path takes it. */
                return Py_BuildValue("(nL)", (Py_ssize_t)0, 0LL);

        /* References of its own for the whole span: the caller's could go while the GIL is released. */
        Py_INCREF(gate);
        Py_INCREF(producer);
        Py_INCREF(messages);
        gate_acquire(gate);
        gate->owner = PyThread_get_thread_ident();
        if (gate->closed) /* close() was called: Producer.produce tells the caller the producer is closed */
                rk = NULL;
        else if (!(rk = handle_of(producer)) && PyErr_Occurred())
                goto out;
        if (rk)
                produced = produce_held(rk, messages, start, stop, topic, (int32_t)part, &nbytes);
out:
        gate->owner = 0;
        PyThread_release_lock(gate->lock);
        Py_DECREF(messages);
        Py_DECREF(producer);
        Py_DECREF(gate);
        if (PyErr_Occurred())
                return NULL;
        return Py_BuildValue("(nL)", produced, nbytes);
}

/* ---- the run scan ------------------------------------------------------------------------------- */
static int same_str(PyObject *a, PyObject *b) {
        return a == b || (PyUnicode_Check(a) && PyUnicode_Check(b) && PyUnicode_Compare(a, b) == 0);
}

/* An accessor's int (None: -1), or -1 with an exception. */
static int long_of(PyCFunction meth, PyObject *msg, long long *out) {
        PyObject *obj = meth(msg, NULL);
        if (!obj)
                return -1;
        *out = obj == Py_None ? -1 : PyLong_AsLongLong(obj);
        Py_DECREF(obj);
        return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Whether m continues the run of (topic, part) at the given offset: 1 yes, 0 no, -1 error. The caller
 * holds a reference to m. */
static int continues(PyObject *m, PyObject *topic, long long part, long long offset) {
        PyObject *obj;
        long long p, o;
        int same;
        if (Py_TYPE(m) != message_type)
                return 0;
        if (long_of(m_offset, m, &o))
                return -1;
        if (o != offset)
                return 0;
        if (long_of(m_partition, m, &p))
                return -1;
        if (p != part)
                return 0;
        if (!(obj = m_topic(m, NULL)))
                return -1;
        same = same_str(obj, topic);
        Py_DECREF(obj);
        if (!same)
                return 0;
        if (!(obj = m_error(m, NULL)))
                return -1;
        same = obj == Py_None;
        Py_DECREF(obj);
        return same;
}

/* run_end(messages, start) -> the end (exclusive) of the run that starts at messages[start]: the
 * following messages of the same topic and partition at the next offsets, without errors; -1 when
 * messages[start] is not a confluent-kafka Message. It keeps the GIL, but the accessors allocate and
 * a collection may run a finalizer: references of its own to what it reads, and the list's length read
 * again before each message. */
static PyObject *run_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        PyObject *messages, *first, *topic = NULL, *result = NULL;
        Py_ssize_t start, n, j;
        long long part, offset;

        if (nargs != 2)
                return PyErr_Format(PyExc_TypeError, "run_end takes 2 arguments (%zd given)", nargs);
        if (!message_type)
                return PyErr_Format(PyExc_RuntimeError, "bind() was not called");
        messages = args[0];
        if (!PyList_CheckExact(messages))
                return PyErr_Format(PyExc_TypeError, "messages must be a list");
        start = PyLong_AsSsize_t(args[1]);
        if (start == -1 && PyErr_Occurred())
                return NULL;
        n = PyList_GET_SIZE(messages);
        if (start < 0 || start >= n)
                return PyErr_Format(PyExc_IndexError, "start %zd outside 0..%zd", start, n - 1);
        first = PyList_GET_ITEM(messages, start);
        if (Py_TYPE(first) != message_type)
                return PyLong_FromLong(-1); /* not a consumed message: the caller's own scan */
        Py_INCREF(messages);
        Py_INCREF(first);
        if (!(topic = m_topic(first, NULL)) || long_of(m_partition, first, &part) || long_of(m_offset, first, &offset))
                goto out;
        for (j = start + 1; j < PyList_GET_SIZE(messages); j++) {
                PyObject *m = PyList_GET_ITEM(messages, j);
                int more;
                Py_INCREF(m);
                more = continues(m, topic, part, offset + (j - start));
                Py_DECREF(m);
                if (more < 0)
                        goto out;
                if (!more)
                        break;
        }
        result = PyLong_FromSsize_t(j);
out:
        Py_XDECREF(topic);
        Py_DECREF(first);
        Py_DECREF(messages);
        return result;
}

/* count_released_cpu(on) -> whether it was on */
static PyObject *count_released_cpu(PyObject *self, PyObject *on) {
        int was = count_released, now = PyObject_IsTrue(on);
        if (now < 0)
                return NULL;
        count_released = now;
        return PyBool_FromLong(was);
}

static PyObject *released_cpu_ns(PyObject *self, PyObject *unused) {
        return PyLong_FromUnsignedLongLong(released_ns);
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind(cimpl_path, Producer, Message): look up librdkafka's functions through confluent_kafka.cimpl's "
     "library, and Message's accessors; returns librdkafka's version number."},
    {"client_name", client_name, METH_O, "client_name(producer): librdkafka's name of the producer's client."},
    {"produce_span", (PyCFunction)(void (*)(void))produce_span, METH_FASTCALL,
     "produce_span(gate, producer, messages, start, stop, topic, partition) -> (produced, value bytes)."},
    {"run_end", (PyCFunction)(void (*)(void))run_end, METH_FASTCALL,
     "run_end(messages, start) -> the end (exclusive) of the run starting at start."},
    {"count_released_cpu", count_released_cpu, METH_O,
     "count_released_cpu(on) -> whether it was on: time the spans' sections without the GIL (thread CPU "
     "clock, two reads per section) into released_cpu_ns(). Off by default: the reads cost a system call each."},
    {"released_cpu_ns", released_cpu_ns, METH_NOARGS,
     "released_cpu_ns() -> CPU nanoseconds every thread's spans spent without the GIL while counting was on."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bulk_produce", "Produce a stretch of consumed messages in one call.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bulk_produce(void) {
        PyObject *m;
        if (PyType_Ready(&GateType) < 0)
                return NULL;
        if (!(m = PyModule_Create(&module)))
                return NULL;
        if (PyModule_AddObjectRef(m, "Gate", (PyObject *)&GateType) < 0) {
                Py_DECREF(m);
                return NULL;
        }
        return m;
}
