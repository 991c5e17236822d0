/* Compiled fast path of `audit verify`'s walk over a keyed trail (governance/trajectory.py).
 *
 * `Scanner(key, prefix, boundary, prev, expected, runs, kinds, quote, fallback)` is called
 * with one event's columns `(seq, run_id, run_seq, kind, at_ms, payload, prev_hash, stored)`,
 * from inside SQLite's scan (as the registered SQL function) or by `run(rows)` over a cursor.
 * It passes an event exactly when the Python walk's inline check would, with the same effects:
 * the next sequence number (`expected`), linked to the last MAC passed (`prev`), not the keyed
 * boundary the keyring recorded, next in its run (`runs`: run id -> [next run_seq, run id as
 * JSON]), and `prefix + hex(MAC(text)) == stored` for the event's canonical text, built as
 * `_ChainCheck.event` builds it (kind as JSON from `kinds`, filled through `quote`). It takes
 * only exact ints and strs; any other event, and any event that does not pass, goes to
 * `fallback(*row)` (Python), which decides, words the failure and may move `prev` and
 * `expected` on. So the outcome is the Python walk's; the tests compare both on random and
 * tampered trails (tests/unit/governance/test_chain_scanner.py).
 *
 * The MAC is HMAC-SHA-256 (RFC 2104) over OpenSSL's SHA-256 (libcrypto, the library
 * Python's own hashlib uses): the key's inner and outer padded states are hashed once, and each
 * event copies them (plain structs) instead of calling a keyed context's `copy`, `update` and
 * `finalize` through the interpreter, which cost more than the hashing itself. This file holds
 * no hash implementation; the tests compare its MACs with Python's `hmac`.
 *
 * Called by SQLite, an exception cannot travel through the scan (SQLite would swallow it), so
 * the scanner keeps it in `error` and returns 0 to stop the scan; `run` raises it.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "structmember.h"

#include <string.h>

/* SHA256_Init/Update/Final: deprecated in OpenSSL 3 in favour of EVP, whose context copy
 * allocates; still part of its API, and a plain struct to copy. */
#define OPENSSL_API_COMPAT 0x10100000L
#include <openssl/crypto.h>
#include <openssl/sha.h>

typedef struct {
    PyObject_HEAD
    SHA256_CTX inner;   /* after the key XOR ipad block */
    SHA256_CTX outer;   /* after the key XOR opad block */
    int keyed;
    PyObject *prefix;   /* str, ASCII: its characters are `prefix_text` */
    const char *prefix_text;
    Py_ssize_t prefix_length;
    PyObject *prev;     /* str */
    PyObject *runs;     /* dict */
    PyObject *kinds;    /* dict */
    PyObject *quote;
    PyObject *fallback;
    PyObject *error;    /* the exception that stopped a scan, or None */
    long long expected;
    long long boundary;
    char *buffer;
    Py_ssize_t capacity;
    vectorcallfunc vectorcall;
} Scanner;

static const char HEX[] = "0123456789abcdef";

/* Appends `length` bytes; returns -1 (MemoryError set) when the buffer cannot grow. */
static int put(Scanner *self, Py_ssize_t *used, const char *data, Py_ssize_t length) {
    if (*used + length > self->capacity) {
        Py_ssize_t wanted = (*used + length) * 2;
        char *grown = PyMem_Realloc(self->buffer, (size_t)wanted);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->buffer = grown;
        self->capacity = wanted;
    }
    if (length > 0) {
        memcpy(self->buffer + *used, data, (size_t)length);
    }
    *used += length;
    return 0;
}

#define PUT_LITERAL(S) put(self, &used, (S), (Py_ssize_t)(sizeof(S) - 1))

/* The UTF-8 of an exact str, or NULL with no error set when it has none (lone surrogates):
 * such an event is left to the fallback, which raises what the interpreter raises. */
static const char *utf8_of(PyObject *text, Py_ssize_t *length) {
    const char *data = PyUnicode_AsUTF8AndSize(text, length);
    if (data == NULL && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
    }
    return data;
}

static int put_str(Scanner *self, Py_ssize_t *used, PyObject *text) {
    Py_ssize_t length;
    const char *data = utf8_of(text, &length);
    if (data == NULL) {
        return PyErr_Occurred() ? -1 : 1;
    }
    return put(self, used, data, length);
}

/* Decimal, as Python's str(int) writes it. */
static int put_int(Scanner *self, Py_ssize_t *used, long long value) {
    char digits[24];
    char *end = digits + sizeof digits, *at = end;
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value
                                             : (unsigned long long)value;
    do {
        *--at = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude != 0);
    if (value < 0) {
        *--at = '-';
    }
    return put(self, used, at, end - at);
}

/* An exact int as a long long, or 1 with no error when it is none or does not fit. */
static int exact_int(PyObject *value, long long *out) {
    if (!PyLong_CheckExact(value)) {
        return 1;
    }
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (overflow != 0) {
        return 1;
    }
    if (*out == -1 && PyErr_Occurred()) {
        return -1;
    }
    return 0;
}

/* 1 when `stored` is `prefix` followed by the lowercase hex of the 32-byte `mac`. */
static int matches(Scanner *self, PyObject *stored, const unsigned char *bytes) {
    const char *prefix = self->prefix_text;
    Py_ssize_t prefix_length = self->prefix_length;
    if (!PyUnicode_IS_ASCII(stored)) {
        return 0;
    }
    const char *text = (const char *)PyUnicode_DATA(stored);
    Py_ssize_t stored_length = PyUnicode_GET_LENGTH(stored);
    if (stored_length != prefix_length + 64 || memcmp(text, prefix, (size_t)prefix_length) != 0) {
        return 0;
    }
    text += prefix_length;
    for (int i = 0; i < 32; i++) {
        if (text[2 * i] != HEX[bytes[i] >> 4] || text[2 * i + 1] != HEX[bytes[i] & 15]) {
            return 0;
        }
    }
    return 1;
}

/* The inline check: 1 passed (state moved on), 0 not passed (nothing changed), -1 error. */
static int try_pass(Scanner *self, PyObject *const *row) {
    PyObject *seq_o = row[0], *run_id = row[1], *run_seq_o = row[2], *kind = row[3];
    PyObject *at_ms_o = row[4], *payload = row[5], *prev_hash = row[6], *stored = row[7];
    long long seq, run_seq, at_ms;
    int r;
    if ((r = exact_int(seq_o, &seq)) != 0) {
        return r < 0 ? -1 : 0;
    }
    if (seq != self->expected || seq == self->boundary) {
        return 0;
    }
    if (!PyUnicode_CheckExact(run_id) || !PyUnicode_CheckExact(kind) ||
        !PyUnicode_CheckExact(payload) || !PyUnicode_CheckExact(prev_hash) ||
        !PyUnicode_CheckExact(stored) || !PyUnicode_CheckExact(self->prev)) {
        return 0;
    }
    if ((r = exact_int(run_seq_o, &run_seq)) != 0 || (r = exact_int(at_ms_o, &at_ms)) != 0) {
        return r < 0 ? -1 : 0;
    }
    r = PyUnicode_Compare(prev_hash, self->prev);
    if (r != 0) {
        return r == -1 && PyErr_Occurred() ? -1 : 0;
    }
    /* The run: its next run_seq and its id as JSON (quoted here for a run not met yet). */
    PyObject *run = PyDict_GetItemWithError(self->runs, run_id); /* borrowed */
    PyObject *run_json = NULL;                                    /* new reference */
    if (run == NULL) {
        if (PyErr_Occurred()) {
            return -1;
        }
        if (run_seq != 0) {
            return 0;
        }
        run_json = PyObject_CallOneArg(self->quote, run_id);
        if (run_json == NULL) {
            return -1;
        }
    } else {
        if (!PyList_CheckExact(run) || PyList_GET_SIZE(run) != 2) {
            return 0;
        }
        long long next;
        if ((r = exact_int(PyList_GET_ITEM(run, 0), &next)) != 0) {
            return r < 0 ? -1 : 0;
        }
        if (run_seq != next) {
            return 0;
        }
        run_json = PyList_GET_ITEM(run, 1);
        Py_INCREF(run_json);
    }
    int result = -1;
    PyObject *kind_json = NULL;
    kind_json = PyDict_GetItemWithError(self->kinds, kind);
    if (kind_json == NULL) {
        if (PyErr_Occurred()) {
            goto out;
        }
        kind_json = PyObject_CallOneArg(self->quote, kind);
        if (kind_json == NULL || PyDict_SetItem(self->kinds, kind, kind_json) < 0) {
            goto out;
        }
    } else {
        Py_INCREF(kind_json);
    }
    if (!PyUnicode_CheckExact(kind_json) || !PyUnicode_CheckExact(run_json)) {
        result = 0;
        goto out;
    }
    /* {"at_ms":A,"kind":K,"payload":P,"prev_hash":"H","run_id":R,"run_seq":N,"seq":S} */
    Py_ssize_t used = 0;
#define PUT(CALL)                                                                              \
    do {                                                                                       \
        int step_ = (CALL);                                                                    \
        if (step_ != 0) {                                                                      \
            result = step_ < 0 ? -1 : 0;                                                       \
            goto out;                                                                          \
        }                                                                                      \
    } while (0)
    PUT(PUT_LITERAL("{\"at_ms\":"));
    PUT(put_int(self, &used, at_ms));
    PUT(PUT_LITERAL(",\"kind\":"));
    PUT(put_str(self, &used, kind_json));
    PUT(PUT_LITERAL(",\"payload\":"));
    PUT(put_str(self, &used, payload));
    PUT(PUT_LITERAL(",\"prev_hash\":\""));
    PUT(put_str(self, &used, prev_hash));
    PUT(PUT_LITERAL("\",\"run_id\":"));
    PUT(put_str(self, &used, run_json));
    PUT(PUT_LITERAL(",\"run_seq\":"));
    PUT(put_int(self, &used, run_seq));
    PUT(PUT_LITERAL(",\"seq\":"));
    PUT(put_int(self, &used, seq));
    PUT(PUT_LITERAL("}"));
#undef PUT
    unsigned char mac[SHA256_DIGEST_LENGTH];
    SHA256_CTX context = self->inner;
    SHA256_Update(&context, self->buffer, (size_t)used);
    SHA256_Final(mac, &context);
    context = self->outer;
    SHA256_Update(&context, mac, sizeof mac);
    SHA256_Final(mac, &context);
    OPENSSL_cleanse(&context, sizeof context);
    if (!matches(self, stored, mac)) {
        result = 0;
        goto out;
    }
    /* Passed: the run moves on, then the chain. */
    PyObject *next = PyLong_FromLongLong(run_seq + 1);
    if (next == NULL) {
        goto out;
    }
    if (run == NULL) {
        PyObject *entry = PyList_New(2);
        if (entry == NULL) {
            Py_DECREF(next);
            goto out;
        }
        PyList_SET_ITEM(entry, 0, next);
        Py_INCREF(run_json);
        PyList_SET_ITEM(entry, 1, run_json);
        int failed = PyDict_SetItem(self->runs, run_id, entry);
        Py_DECREF(entry);
        if (failed < 0) {
            goto out;
        }
    } else {
        PyList_SetItem(run, 0, next); /* steals `next` */
    }
    Py_INCREF(stored);
    Py_SETREF(self->prev, stored);
    self->expected = seq + 1;
    result = 1;
out:
    Py_XDECREF(run_json);
    Py_XDECREF(kind_json);
    return result;
}

/* One event: the inline check, else the fallback. 1 go on, 0 stop, -1 error. */
static int check_row(Scanner *self, PyObject *const *row, Py_ssize_t count) {
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "Scanner.__init__ was not called");
        return -1;
    }
    if (count == 8 && self->keyed) {
        int passed = try_pass(self, row);
        if (passed != 0) {
            return passed;
        }
    }
    PyObject *answer = PyObject_Vectorcall(self->fallback, row, (size_t)count, NULL);
    if (answer == NULL) {
        return -1;
    }
    int go_on = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return go_on;
}

static PyObject *Scanner_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames) {
    Scanner *self = (Scanner *)callable;
    Py_ssize_t count = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0) {
        PyErr_SetString(PyExc_TypeError, "Scanner takes no keyword arguments");
        return NULL;
    }
    int go_on = check_row(self, args, count);
    if (go_on < 0) {
        /* SQLite would swallow it: kept for the caller, and the scan stops. */
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (value != NULL && traceback != NULL) {
            PyException_SetTraceback(value, traceback);
        }
        Py_XDECREF(type);
        Py_XDECREF(traceback);
        Py_XSETREF(self->error, value != NULL ? value : Py_NewRef(Py_None));
        go_on = 0;
    }
    return PyLong_FromLong(go_on);
}

static PyObject *Scanner_run(Scanner *self, PyObject *rows) {
    PyObject *iterator = PyObject_GetIter(rows);
    if (iterator == NULL) {
        return NULL;
    }
    PyObject *row;
    while ((row = PyIter_Next(iterator)) != NULL) {
        int go_on;
        if (PyTuple_CheckExact(row)) {
            go_on = check_row(self, &PyTuple_GET_ITEM(row, 0), PyTuple_GET_SIZE(row));
        } else {
            PyObject *items = PySequence_Tuple(row);
            go_on = items == NULL ? -1
                                  : check_row(self, &PyTuple_GET_ITEM(items, 0),
                                              PyTuple_GET_SIZE(items));
            Py_XDECREF(items);
        }
        Py_DECREF(row);
        if (go_on <= 0) {
            Py_DECREF(iterator);
            return go_on < 0 ? NULL : Py_NewRef(Py_False);
        }
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_RETURN_TRUE;
}

static int Scanner_init(Scanner *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"key", "prefix", "boundary", "prev", "expected", "runs",
                            "kinds", "quote", "fallback", NULL};
    Py_buffer key;
    PyObject *prefix, *prev, *runs, *kinds, *quote, *fallback;
    long long boundary, expected;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*ULULO!O!OO", names, &key, &prefix,
                                     &boundary, &prev, &expected, &PyDict_Type, &runs,
                                     &PyDict_Type, &kinds, &quote, &fallback)) {
        return -1;
    }
    if (!PyUnicode_IS_ASCII(prefix)) {
        PyBuffer_Release(&key);
        PyErr_SetString(PyExc_ValueError, "the MAC prefix must be ASCII");
        return -1;
    }
    /* RFC 2104: a key longer than the block is hashed first, then padded with zeros. */
    unsigned char block[SHA256_CBLOCK] = {0}, pad[SHA256_CBLOCK];
    if (key.len > SHA256_CBLOCK) {
        SHA256((const unsigned char *)key.buf, (size_t)key.len, block);
    } else {
        memcpy(block, key.buf, (size_t)key.len);
    }
    PyBuffer_Release(&key);
    for (int i = 0; i < SHA256_CBLOCK; i++) {
        pad[i] = block[i] ^ 0x36;
    }
    SHA256_Init(&self->inner);
    SHA256_Update(&self->inner, pad, sizeof pad);
    for (int i = 0; i < SHA256_CBLOCK; i++) {
        pad[i] = block[i] ^ 0x5c;
    }
    SHA256_Init(&self->outer);
    SHA256_Update(&self->outer, pad, sizeof pad);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
    self->keyed = 1;
    Py_XSETREF(self->prefix, Py_NewRef(prefix));
    /* An ASCII str's characters are its bytes, kept as long as `prefix` is. */
    self->prefix_text = (const char *)PyUnicode_DATA(prefix);
    self->prefix_length = PyUnicode_GET_LENGTH(prefix);
    Py_XSETREF(self->prev, Py_NewRef(prev));
    Py_XSETREF(self->runs, Py_NewRef(runs));
    Py_XSETREF(self->kinds, Py_NewRef(kinds));
    Py_XSETREF(self->quote, Py_NewRef(quote));
    Py_XSETREF(self->fallback, Py_NewRef(fallback));
    Py_XSETREF(self->error, Py_NewRef(Py_None));
    self->boundary = boundary;
    self->expected = expected;
    return 0;
}

static PyObject *Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Scanner *self = (Scanner *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = Scanner_vectorcall;
    self->capacity = 1024;
    self->buffer = PyMem_Malloc((size_t)self->capacity);
    if (self->buffer == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static int Scanner_traverse(Scanner *self, visitproc visit, void *arg) {
    Py_VISIT(self->prefix);
    Py_VISIT(self->prev);
    Py_VISIT(self->runs);
    Py_VISIT(self->kinds);
    Py_VISIT(self->quote);
    Py_VISIT(self->fallback);
    Py_VISIT(self->error);
    return 0;
}

static int Scanner_clear(Scanner *self) {
    Py_CLEAR(self->prefix);
    Py_CLEAR(self->prev);
    Py_CLEAR(self->runs);
    Py_CLEAR(self->kinds);
    Py_CLEAR(self->quote);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->error);
    return 0;
}

static void Scanner_dealloc(Scanner *self) {
    PyObject_GC_UnTrack(self);
    Scanner_clear(self);
    OPENSSL_cleanse(&self->inner, sizeof self->inner);
    OPENSSL_cleanse(&self->outer, sizeof self->outer);
    PyMem_Free(self->buffer);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Scanner_get_prev(Scanner *self, void *closure) {
    return Py_NewRef(self->prev);
}

static int Scanner_set_prev(Scanner *self, PyObject *value, void *closure) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "prev cannot be deleted");
        return -1;
    }
    Py_SETREF(self->prev, Py_NewRef(value));
    return 0;
}

static PyObject *Scanner_get_error(Scanner *self, void *closure) {
    return Py_NewRef(self->error);
}

static PyGetSetDef Scanner_getset[] = {
    {"prev", (getter)Scanner_get_prev, (setter)Scanner_set_prev,
     "the MAC of the last event passed", NULL},
    {"error", (getter)Scanner_get_error, NULL,
     "the exception that stopped a scan inside SQLite, or None", NULL},
    {NULL},
};

static PyMemberDef Scanner_members[] = {
    {"expected", T_LONGLONG, offsetof(Scanner, expected), 0,
     "the sequence number the next event must carry"},
    {NULL},
};

static PyMethodDef Scanner_methods[] = {
    {"run", (PyCFunction)Scanner_run, METH_O,
     "Check each row of an iterable: True when every row went on, False when one stopped."},
    {NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "stockade.governance._chainscan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "The compiled inline check of a keyed audit trail's events.",
    .tp_new = Scanner_new,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_traverse = (traverseproc)Scanner_traverse,
    .tp_clear = (inquiry)Scanner_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Scanner, vectorcall),
    .tp_methods = Scanner_methods,
    .tp_members = Scanner_members,
    .tp_getset = Scanner_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_chainscan",
    .m_doc = "Compiled fast path of audit verify's walk over a keyed trail.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__chainscan(void) {
    if (PyType_Ready(&ScannerType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
