/* Compiled scan of a long text for what any secret pattern needs (protocol/secret_scan.py).
 *
 * `hint_starts(text, hints, token_chars, run)` returns, in ascending order, every offset in
 * `text` where one of `hints` (ASCII) begins, and where a run of at least `run` characters
 * of `token_chars` (ASCII) begins. A part of the text holds none of them exactly when
 * `may_be_redacted` says False for it (hints searched as written, runs counted over ASCII
 * characters, which is what its UTF-8 byte scan counts: other characters encode to bytes
 * outside the class). The read tools' text search asks this once per section instead of
 * twelve substring scans per question; tests/unit/protocol/test_hint_starts.py compares the
 * two.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_HINTS 16

typedef struct {
    const char *text[MAX_HINTS];
    Py_ssize_t length[MAX_HINTS];
    /* Per pair of first characters (hints of one character use 0 as their second): the hints
     * starting with them. Almost every position of ordinary text has none. */
    unsigned short pairs[128][128];
    unsigned short singles[128];
    unsigned char classes[128]; /* CLASS_TOKEN, CLASS_HINT */
    Py_ssize_t run;
} Hints;

enum { CLASS_TOKEN = 1, CLASS_HINT = 2 };

static int append_offset(PyObject *found, Py_ssize_t offset, Py_ssize_t *last, int *unsorted) {
    PyObject *at = PyLong_FromSsize_t(offset);
    if (at == NULL) {
        return -1;
    }
    int failed = PyList_Append(found, at);
    Py_DECREF(at);
    *unsorted |= offset < *last;
    *last = offset;
    return failed;
}

/* Whether a hint begins at `i` of a text of one character width; returns 1 and appends `i`
 * when one does, -1 on error. */
#define HINT_AT(TYPE)                                                                          \
    static int hint_at_##TYPE(const Hints *H, const TYPE *chars, Py_ssize_t i,                 \
                              Py_ssize_t length, PyObject *found, Py_ssize_t *last,            \
                              int *unsorted) {                                                 \
        Py_UCS4 c = chars[i];                                                                  \
        Py_UCS4 next = i + 1 < length ? chars[i + 1] : 0;                                      \
        unsigned int candidates = H->singles[c] | (next < 128 ? H->pairs[c][next] : 0);       \
        while (candidates != 0) {                                                              \
            int h = __builtin_ctz(candidates);                                                 \
            candidates &= candidates - 1;                                                      \
            if (i + H->length[h] > length) {                                                   \
                continue;                                                                      \
            }                                                                                  \
            Py_ssize_t k = 2;                                                                  \
            while (k < H->length[h] && chars[i + k] == (TYPE)(unsigned char)H->text[h][k]) {   \
                k++;                                                                           \
            }                                                                                  \
            if (k >= H->length[h]) {                                                           \
                return append_offset(found, i, last, unsorted) < 0 ? -1 : 1;                   \
            }                                                                                  \
        }                                                                                      \
        return 0;                                                                              \
    }
HINT_AT(Py_UCS1)
HINT_AT(Py_UCS2)
HINT_AT(Py_UCS4)

/* Scans text of one character width: a class per ASCII character (token character, may
 * begin a hint) keeps the common path to a table load and two tests. */
#define SCAN(TYPE)                                                                             \
    do {                                                                                       \
        const TYPE *chars = (const TYPE *)data;                                                \
        for (Py_ssize_t i = 0; i < length; i++) {                                              \
            Py_UCS4 c = chars[i];                                                              \
            unsigned char class = c < 128 ? H->classes[c] : 0;                                 \
            if (class & CLASS_TOKEN) {                                                         \
                if (++streak == H->run &&                                                      \
                    append_offset(found, i - H->run + 1, &last, &unsorted) < 0) {              \
                    goto error;                                                                \
                }                                                                              \
            } else {                                                                           \
                streak = 0;                                                                    \
            }                                                                                  \
            if (class & CLASS_HINT) {                                                          \
                Py_UCS4 next = i + 1 < length ? chars[i + 1] : 0;                              \
                if ((H->singles[c] | (next < 128 ? H->pairs[c][next] : 0)) != 0 &&            \
                    hint_at_##TYPE(H, chars, i, length, found, &last, &unsorted) < 0) {       \
                    goto error;                                                                \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static PyObject *hint_starts(PyObject *module, PyObject *const *args, Py_ssize_t count) {
    (void)module;
    if (count != 4 || !PyUnicode_Check(args[0]) || !PyTuple_Check(args[1]) ||
        !PyUnicode_Check(args[2]) || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "hint_starts(text, hints, token_chars, run)");
        return NULL;
    }
    PyObject *text = args[0];
    PyObject *hints = args[1];
    PyObject *token_chars = args[2];
    Py_ssize_t hint_count = PyTuple_GET_SIZE(hints);
    Hints *H = PyMem_Calloc(1, sizeof(Hints));
    if (H == NULL) {
        return PyErr_NoMemory();
    }
    PyObject *found = NULL;
    H->run = PyLong_AsSsize_t(args[3]);
    if (H->run == -1 && PyErr_Occurred()) {
        goto error;
    }
    if (hint_count > MAX_HINTS || H->run < 1 || !PyUnicode_IS_ASCII(token_chars)) {
        PyErr_SetString(PyExc_ValueError,
                        "at most 16 hints, a run of at least 1, ASCII token characters");
        goto error;
    }
    for (Py_ssize_t h = 0; h < hint_count; h++) {
        PyObject *hint = PyTuple_GET_ITEM(hints, h);
        if (!PyUnicode_Check(hint) || !PyUnicode_IS_ASCII(hint) ||
            PyUnicode_GET_LENGTH(hint) == 0) {
            PyErr_SetString(PyExc_ValueError, "hints are non-empty ASCII text");
            goto error;
        }
        H->text[h] = (const char *)PyUnicode_DATA(hint);
        H->length[h] = PyUnicode_GET_LENGTH(hint);
        unsigned char c0 = (unsigned char)H->text[h][0];
        H->classes[c0] |= CLASS_HINT;
        if (H->length[h] == 1) {
            H->singles[c0] |= (unsigned short)(1u << h);
        } else {
            H->pairs[c0][(unsigned char)H->text[h][1]] |= (unsigned short)(1u << h);
        }
    }
    const char *chars = (const char *)PyUnicode_DATA(token_chars);
    for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(token_chars); i++) {
        H->classes[(unsigned char)chars[i]] |= CLASS_TOKEN;
    }
    found = PyList_New(0);
    if (found == NULL) {
        goto error;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    int unsorted = 0; /* a run is reported where it starts, after hints inside it */
    Py_ssize_t last = -1;
    Py_ssize_t streak = 0;
    if (kind == PyUnicode_1BYTE_KIND) {
        SCAN(Py_UCS1);
    } else if (kind == PyUnicode_2BYTE_KIND) {
        SCAN(Py_UCS2);
    } else {
        SCAN(Py_UCS4);
    }
    if (unsorted && PyList_Sort(found) < 0) {
        goto error;
    }
    PyMem_Free(H);
    return found;
error:
    Py_XDECREF(found);
    PyMem_Free(H);
    return NULL;
}

static PyMethodDef methods[] = {
    {"hint_starts", (PyCFunction)(void (*)(void))hint_starts, METH_FASTCALL,
     "hint_starts(text, hints, token_chars, run, /)\n--\n\n"
     "Ascending offsets where a hint or a long enough run of token characters begins."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    "stockade.protocol._hints",
    "Compiled scan of a long text for what any secret pattern needs.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__hints(void) {
    return PyModule_Create(&module_definition);
}
