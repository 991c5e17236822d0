/* Compiled scans of the read tools' search text: what any secret pattern needs
 * (protocol/secret_scan.py), and which haystacks hold a needle (tools/document_index.py).
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

#define _GNU_SOURCE /* memmem */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_HINTS 16

typedef struct {
    const char *text[MAX_HINTS];
    Py_ssize_t length[MAX_HINTS];
    /* The hints that may begin at a position, by its first two characters: row_of[first]
     * picks a row (row 0, all zeros, for a character no hint begins with), and the row holds,
     * per second character, the hints that start with both (a hint of one character in every
     * column). Looked up for every position without a branch; almost every answer is 0. */
    unsigned char row_of[256];
    unsigned short rows[MAX_HINTS + 1][256];
    /* The same, as a list for a 16-byte filter: each distinct (first, second) pair of a
     * hint, and each first character of a one-character hint. */
    unsigned char pair_first[MAX_HINTS][16], pair_second[MAX_HINTS][16], single[MAX_HINTS][16];
    int pairs, singles;
    unsigned char classes[256]; /* CLASS_TOKEN; 0 past ASCII */
    Py_ssize_t run;
} Hints;

enum { CLASS_TOKEN = 1 };

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

/* Whether one of the `candidates` (hints whose first two characters are at `i`) begins at `i`
 * of a text of one character width; returns 1 and appends `i` when one does, -1 on error. */
#define HINT_AT(TYPE)                                                                          \
    static int hint_at_##TYPE(const Hints *H, const TYPE *chars, Py_ssize_t i,                 \
                              Py_ssize_t length, unsigned int candidates, PyObject *found,     \
                              Py_ssize_t *last, int *unsorted) {                               \
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

/* Scans text of one character width. A compact str holds a NUL after its last character, so
 * `chars[i + 1]` is always there (0 past the end, which no hint's second character is); a
 * character past Latin-1 looks up as NUL, which is neither a token character nor the start
 * of a hint. For one-byte text the compiler drops both range tests. */
#define SCAN(TYPE)                                                                             \
    do {                                                                                       \
        const TYPE *chars = (const TYPE *)data;                                                \
        for (Py_ssize_t i = 0; i < length; i++) {                                              \
            Py_UCS4 c = chars[i];                                                              \
            Py_UCS4 next = chars[i + 1];                                                       \
            Py_UCS4 small = c < 256 ? c : 0;                                                   \
            /* The streak counts on through token characters and drops to 0 on any other,  \
             * without a branch: ordinary text alternates every few characters. */          \
            streak = (streak + 1) & -(Py_ssize_t)(H->classes[small] & CLASS_TOKEN);            \
            if (streak == H->run &&                                                            \
                append_offset(found, i - H->run + 1, &last, &unsorted) < 0) {                  \
                goto error;                                                                    \
            }                                                                                  \
            unsigned int candidates = H->rows[H->row_of[small]][next < 256 ? next : 0];        \
            if (candidates != 0 && hint_at_##TYPE(H, chars, i, length, candidates, found,     \
                                                  &last, &unsorted) < 0) {                    \
                goto error;                                                                    \
            }                                                                                  \
        }                                                                                      \
    } while (0)

/* One-byte text, in two simpler passes. Runs: a run of `run` token characters covers one of
 * every `run` consecutive positions, so only those checkpoints are looked at, and a token
 * character there is widened to its whole run (each run at most once: the next checkpoint is
 * `run` past its end). Hints: the first-two-character lookup at every position. The offsets
 * come out in two ascending lists, merged by the caller's sort. */
static int scan_ucs1(const Hints *H, const Py_UCS1 *chars, Py_ssize_t length, PyObject *found,
                     Py_ssize_t *last, int *unsorted) {
    const Py_ssize_t run = H->run;
    for (Py_ssize_t i = run - 1; i < length;) {
        if (!(H->classes[chars[i]] & CLASS_TOKEN)) {
            i += run;
            continue;
        }
        Py_ssize_t start = i, end = i;
        while (start > 0 && (H->classes[chars[start - 1]] & CLASS_TOKEN)) {
            start--;
        }
        while (end + 1 < length && (H->classes[chars[end + 1]] & CLASS_TOKEN)) {
            end++;
        }
        if (end - start + 1 >= run && append_offset(found, start, last, unsorted) < 0) {
            return -1;
        }
        i = end + 1 + run;
    }
    Py_ssize_t i = 0;
#if defined(__SSE2__)
    /* Sixteen positions at a time: the positions whose character and the next make a hint's
     * first pair (or a one-character hint), compared in vectors; only those are looked up.
     * The loads read chars[i .. i + 16], the last at most the terminating NUL. */
    for (; i + 16 <= length; i += 16) {
        __m128i now = _mm_loadu_si128((const __m128i *)(chars + i));
        __m128i next = _mm_loadu_si128((const __m128i *)(chars + i + 1));
        __m128i hit = _mm_setzero_si128();
        for (int p = 0; p < H->pairs; p++) {
            __m128i first = _mm_loadu_si128((const __m128i *)H->pair_first[p]);
            __m128i second = _mm_loadu_si128((const __m128i *)H->pair_second[p]);
            hit = _mm_or_si128(hit, _mm_and_si128(_mm_cmpeq_epi8(now, first),
                                                  _mm_cmpeq_epi8(next, second)));
        }
        for (int p = 0; p < H->singles; p++) {
            __m128i first = _mm_loadu_si128((const __m128i *)H->single[p]);
            hit = _mm_or_si128(hit, _mm_cmpeq_epi8(now, first));
        }
        unsigned int mask = (unsigned int)_mm_movemask_epi8(hit);
        while (mask != 0) {
            Py_ssize_t at = i + __builtin_ctz(mask);
            mask &= mask - 1;
            unsigned int candidates = H->rows[H->row_of[chars[at]]][chars[at + 1]];
            if (hint_at_Py_UCS1(H, chars, at, length, candidates, found, last, unsorted) < 0) {
                return -1;
            }
        }
    }
#endif
    for (; i < length; i++) {
        unsigned int candidates = H->rows[H->row_of[chars[i]]][chars[i + 1]];
        if (candidates != 0 &&
            hint_at_Py_UCS1(H, chars, i, length, candidates, found, last, unsorted) < 0) {
            return -1;
        }
    }
    return 0;
}

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
    int rows_used = 0;
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
        if (memchr(H->text[h], 0, (size_t)H->length[h]) != NULL) {
            /* NUL stands for "past the end" and "past Latin-1" in the lookup. */
            PyErr_SetString(PyExc_ValueError, "a hint cannot hold NUL");
            goto error;
        }
        if (H->row_of[c0] == 0) {
            H->row_of[c0] = (unsigned char)++rows_used;
        }
        unsigned short *row = H->rows[H->row_of[c0]];
        if (H->length[h] == 1) {
            int listed = 0;
            for (int p = 0; p < H->singles; p++) {
                listed |= H->single[p][0] == c0;
            }
            if (!listed) {
                memset(H->single[H->singles++], c0, 16);
            }
            for (int next = 0; next < 256; next++) {
                row[next] |= (unsigned short)(1u << h);
            }
        } else {
            unsigned char c1 = (unsigned char)H->text[h][1];
            int listed = 0;
            for (int p = 0; p < H->pairs; p++) {
                listed |= H->pair_first[p][0] == c0 && H->pair_second[p][0] == c1;
            }
            if (!listed) {
                memset(H->pair_first[H->pairs], c0, 16);
                memset(H->pair_second[H->pairs++], c1, 16);
            }
            row[c1] |= (unsigned short)(1u << h);
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
        if (scan_ucs1(H, (const Py_UCS1 *)data, length, found, &last, &unsorted) < 0) {
            goto error;
        }
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

/* `haystacks_containing(text, starts, needle)`: the ascending positions i whose haystack
 * text[starts[i]:starts[i + 1] - 1] contains `needle` (no NUL in it, so a match never spans the
 * NUL between two haystacks): memmem over the text's bytes in its own width, resumed after each
 * match at the next haystack, so the work is one pass plus one step per matching haystack. */
static PyObject *haystacks_containing(PyObject *module, PyObject *const *args, Py_ssize_t count) {
    (void)module;
    if (count != 3 || !PyUnicode_Check(args[0]) || !PyList_Check(args[1]) ||
        !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "haystacks_containing(text, starts, needle)");
        return NULL;
    }
    PyObject *text = args[0], *starts = args[1], *needle = args[2];
    Py_ssize_t entities = PyList_GET_SIZE(starts) - 1;
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    Py_ssize_t needle_length = PyUnicode_GET_LENGTH(needle);
    int kind = PyUnicode_KIND(text);
    Py_ssize_t nul = PyUnicode_FindChar(needle, 0, 0, needle_length, 1);
    if (nul == -2) {
        return NULL;
    }
    if (nul != -1) {
        PyErr_SetString(PyExc_ValueError, "the needle must not hold a NUL");
        return NULL;
    }
    PyObject *found = PyList_New(0);
    if (found == NULL || entities <= 0 || PyUnicode_KIND(needle) > kind) {
        return found; /* a character wider than the text's holds no match */
    }
    /* The needle in the text's width. */
    void *wide = needle_length == 0 ? NULL : PyUnicode_AsUCS4Copy(needle);
    if (needle_length != 0 && wide == NULL) {
        Py_DECREF(found);
        return NULL;
    }
    char *pattern = PyMem_Malloc((size_t)(needle_length * kind + 1));
    if (pattern == NULL) {
        PyMem_Free(wide);
        Py_DECREF(found);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t k = 0; k < needle_length; k++) {
        Py_UCS4 c = ((Py_UCS4 *)wide)[k];
        if (kind == PyUnicode_1BYTE_KIND) {
            ((Py_UCS1 *)pattern)[k] = (Py_UCS1)c;
        } else if (kind == PyUnicode_2BYTE_KIND) {
            ((Py_UCS2 *)pattern)[k] = (Py_UCS2)c;
        } else {
            ((Py_UCS4 *)pattern)[k] = c;
        }
    }
    PyMem_Free(wide);
    const char *bytes = (const char *)PyUnicode_DATA(text);
    size_t pattern_bytes = (size_t)(needle_length * kind);
    Py_ssize_t position = 0;
    Py_ssize_t from = 0; /* in characters */
    while (position < entities) {
        Py_ssize_t at;
        if (needle_length == 0) {
            at = from;
        } else {
            const char *hit = NULL;
            size_t offset = (size_t)from * (size_t)kind;
            while (offset + pattern_bytes <= (size_t)length * (size_t)kind) {
                hit = memmem(bytes + offset, (size_t)length * (size_t)kind - offset, pattern,
                             pattern_bytes);
                if (hit == NULL || (size_t)(hit - bytes) % (size_t)kind == 0) {
                    break;
                }
                offset = (size_t)(hit - bytes) + 1; /* inside a character: look further */
                hit = NULL;
            }
            if (hit == NULL) {
                break;
            }
            at = (Py_ssize_t)((size_t)(hit - bytes) / (size_t)kind);
        }
        /* The haystack holding `at`: the last whose start is at or before it. */
        while (position + 1 < entities) {
            PyObject *next = PyList_GET_ITEM(starts, position + 1);
            Py_ssize_t next_start = PyLong_AsSsize_t(next);
            if (next_start == -1 && PyErr_Occurred()) {
                goto error;
            }
            if (next_start > at) {
                break;
            }
            position++;
        }
        PyObject *index = PyLong_FromSsize_t(position);
        if (index == NULL || PyList_Append(found, index) < 0) {
            Py_XDECREF(index);
            goto error;
        }
        Py_DECREF(index);
        position++;
        if (position >= entities) {
            break;
        }
        from = PyLong_AsSsize_t(PyList_GET_ITEM(starts, position));
        if (from == -1 && PyErr_Occurred()) {
            goto error;
        }
    }
    PyMem_Free(pattern);
    return found;
error:
    PyMem_Free(pattern);
    Py_DECREF(found);
    return NULL;
}

static PyMethodDef methods[] = {
    {"haystacks_containing", (PyCFunction)(void (*)(void))haystacks_containing, METH_FASTCALL,
     "haystacks_containing(text, starts, needle, /)\n--\n\n"
     "Ascending positions whose NUL-separated haystack contains the needle."},
    {"hint_starts", (PyCFunction)(void (*)(void))hint_starts, METH_FASTCALL,
     "hint_starts(text, hints, token_chars, run, /)\n--\n\n"
     "Ascending offsets where a hint or a long enough run of token characters begins."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    "stockade.protocol._hints",
    "Compiled scans of the read tools' search text: secret hints, haystacks holding a needle.",
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
