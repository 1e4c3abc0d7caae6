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
 * How it reaches librdkafka: confluent-kafka's Producer object starts with PyObject_HEAD and then the
 * rd_kafka_t pointer (confluent_kafka.h, struct Handle, unchanged since 2016), and the functions are
 * looked up in the librdkafka that confluent-kafka loaded (bind()). The Message accessors are called
 * through their method table entries, not by reading Message's fields, so Message's layout is not
 * assumed. The few librdkafka declarations needed are below; they are its stable C ABI (rdkafka.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <sys/types.h>

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
        PyObject_HEAD rd_kafka_t *rk;
} HandleHead;

static PyTypeObject *producer_type;
static PyTypeObject *message_type;
static PyCFunction m_value, m_key, m_timestamp, m_headers, m_topic, m_partition, m_offset, m_error;

/* How many records are gathered (with the GIL) before they are produced (without it). */
#define CHUNK 256

typedef struct {
        PyObject *value; /* owned references, released after produce (librdkafka copies) */
        PyObject *key;
        int64_t timestamp;
        rd_kafka_headers_t *headers; /* passed to librdkafka on success, destroyed otherwise */
} Item;

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

static void *symbol(void *lib, const char *name) {
        void *sym = dlsym(lib, name);
        if (!sym)
                PyErr_Format(PyExc_ImportError, "librdkafka has no %s", name);
        return sym;
}

/* bind(librdkafka_path, Producer, Message) -> librdkafka's version number */
static PyObject *bind(PyObject *self, PyObject *args) {
        const char *path;
        PyObject *ptype, *mtype;
        void *lib;
        if (!PyArg_ParseTuple(args, "sO!O!", &path, &PyType_Type, &ptype, &PyType_Type, &mtype))
                return NULL;
        /* RTLD_NOLOAD: only the library confluent-kafka already loaded, never another copy. */
        lib = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (!lib)
                return PyErr_Format(PyExc_ImportError, "librdkafka is not loaded from %s", path);
        if (!(rk_api.producev = (producev_fn)symbol(lib, "rd_kafka_producev")) ||
            !(rk_api.topic_new = (topic_new_fn)symbol(lib, "rd_kafka_topic_new")) ||
            !(rk_api.topic_destroy = (topic_destroy_fn)symbol(lib, "rd_kafka_topic_destroy")) ||
            !(rk_api.headers_new = (headers_new_fn)symbol(lib, "rd_kafka_headers_new")) ||
            !(rk_api.headers_destroy = (headers_destroy_fn)symbol(lib, "rd_kafka_headers_destroy")) ||
            !(rk_api.header_add = (header_add_fn)symbol(lib, "rd_kafka_header_add")) ||
            !(rk_api.name = (name_fn)symbol(lib, "rd_kafka_name")) ||
            !(rk_api.type = (type_fn)symbol(lib, "rd_kafka_type")) ||
            !(rk_api.version = (version_fn)symbol(lib, "rd_kafka_version"))) {
                rk_api.producev = NULL;
                return NULL; /* the handle stays open: the library is confluent-kafka's */
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

static rd_kafka_headers_t *headers_of(PyObject *list, int *ok) {
        /* Message.headers(): None, or a list of (str, bytes | None) */
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

/* One record's parts, or 0 when it is not a plain consumed record (the Python path takes it). */
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

/* produce_span(producer, messages, start, stop, topic, partition) -> (produced, value bytes) */
static PyObject *produce_span(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        rd_kafka_t *rk;
        rd_kafka_topic_t *rkt;
        PyObject *messages;
        Py_ssize_t start, stop, pos, n, done, k;
        const char *topic;
        long part;
        long long nbytes = 0;
        int more = 1;
        Item items[CHUNK];

        if (nargs != 6)
                return PyErr_Format(PyExc_TypeError, "produce_span takes 6 arguments (%zd given)", nargs);
        if (!(rk = handle_of(args[0]))) {
                if (PyErr_Occurred())
                        return NULL;
                return Py_BuildValue("(nL)", (Py_ssize_t)0, 0LL); /* closed: Producer.produce says so */
        }
        messages = args[1];
        if (!PyList_CheckExact(messages))
                return PyErr_Format(PyExc_TypeError, "messages must be a list");
        start = PyLong_AsSsize_t(args[2]);
        stop = PyLong_AsSsize_t(args[3]);
        topic = PyUnicode_AsUTF8(args[4]);
        part = PyLong_AsLong(args[5]);
        if (PyErr_Occurred())
                return NULL;
        if (stop > PyList_GET_SIZE(messages))
                stop = PyList_GET_SIZE(messages);
        if (start < 0 || start >= stop)
                return Py_BuildValue("(nL)", (Py_ssize_t)0, 0LL);
        if (!(rkt = rk_api.topic_new(rk, topic, NULL)))
                return Py_BuildValue("(nL)", (Py_ssize_t)0, 0LL);

        pos = start;
        while (more && pos < stop) {
                rd_kafka_resp_err_t err = 0;
                n = 0;
                while (n < CHUNK && pos + n < stop) {
                        if (!gather(PyList_GET_ITEM(messages, pos + n), &items[n])) {
                                more = 0;
                                break;
                        }
                        n++;
                }
                done = 0;
                Py_BEGIN_ALLOW_THREADS
                for (; done < n; done++) {
                        const char *value, *key;
                        size_t value_len, key_len;
                        bytes_of(items[done].value, &value, &value_len);
                        bytes_of(items[done].key, &key, &key_len);
                        err = rk_api.producev(rk, VTYPE_MSGFLAGS, MSG_F_COPY, VTYPE_RKT, rkt,
                                              VTYPE_PARTITION, (int32_t)part, VTYPE_KEY, key, key_len,
                                              VTYPE_VALUE, value, value_len, VTYPE_TIMESTAMP,
                                              items[done].timestamp, VTYPE_HEADERS, items[done].headers,
                                              VTYPE_END);
                        if (err)
                                break;
                        nbytes += (long long)value_len;
                }
                Py_END_ALLOW_THREADS
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
        return Py_BuildValue("(nL)", pos - start, nbytes);
}

static int same_str(PyObject *a, PyObject *b) {
        return a == b || (PyUnicode_Check(a) && PyUnicode_Check(b) && PyUnicode_Compare(a, b) == 0);
}

/* run_end(messages, start) -> the end (exclusive) of the run that starts at messages[start]: the
 * following messages of the same topic and partition at the next offsets, without errors; -1 when
 * messages[start] is not a confluent-kafka Message. */
static PyObject *run_end(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
        PyObject *messages, *first, *topic = NULL, *obj;
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
#define LONG_OF(msg, meth, out)                                       \
        do {                                                          \
                obj = meth(msg, NULL);                                \
                if (!obj)                                             \
                        goto fail;                                    \
                out = obj == Py_None ? -1 : PyLong_AsLongLong(obj);   \
                Py_DECREF(obj);                                       \
                if (out == -1 && PyErr_Occurred())                    \
                        goto fail;                                    \
        } while (0)
        if (!(topic = m_topic(first, NULL)))
                return NULL;
        LONG_OF(first, m_partition, part);
        LONG_OF(first, m_offset, offset);
        for (j = start + 1; j < n; j++) {
                PyObject *m = PyList_GET_ITEM(messages, j), *t;
                long long p, o;
                int same;
                if (Py_TYPE(m) != message_type)
                        break;
                LONG_OF(m, m_offset, o);
                if (o != offset + (j - start))
                        break;
                LONG_OF(m, m_partition, p);
                if (p != part)
                        break;
                if (!(t = m_topic(m, NULL)))
                        goto fail;
                same = same_str(t, topic);
                Py_DECREF(t);
                if (!same)
                        break;
                if (!(obj = m_error(m, NULL)))
                        goto fail;
                same = obj == Py_None;
                Py_DECREF(obj);
                if (!same)
                        break;
        }
#undef LONG_OF
        Py_DECREF(topic);
        return PyLong_FromSsize_t(j);
fail:
        Py_XDECREF(topic);
        return NULL;
}

static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind(librdkafka_path, Producer, Message): look up librdkafka's functions and Message's accessors."},
    {"client_name", client_name, METH_O, "client_name(producer): librdkafka's name of the producer's client."},
    {"produce_span", (PyCFunction)(void (*)(void))produce_span, METH_FASTCALL,
     "produce_span(producer, messages, start, stop, topic, partition) -> (produced, value bytes)."},
    {"run_end", (PyCFunction)(void (*)(void))run_end, METH_FASTCALL,
     "run_end(messages, start) -> the end (exclusive) of the run starting at start."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bulk_produce", "Produce a stretch of consumed messages in one call.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bulk_produce(void) { return PyModule_Create(&module); }
