/* Compiled reader for the plain block-YAML subset that `.thf` writers emit.
 *
 * `loads(text)` returns exactly what `yaml_rs.loads(text, parse_datetime=False)` returns for
 * a text inside the subset below, and None for any other text, which the caller then reads
 * with yaml-rs (thf/reader.py). It never raises for bad input: every construct it does not
 * handle, and every error, is "not in the subset", so messages stay the full parser's.
 *
 * The subset (what Stockade's writer and ThreatForge's desktop writer produce):
 * - a block mapping at column 0 as the root, with blank lines and `#` comment lines anywhere
 *   between entries; every line ends with '\n' (no CR, no tab, no other control character,
 *   none of U+0080-U+009F, U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF anywhere);
 * - keys: `[A-Za-z][A-Za-z0-9_-]*` directly followed by ':', never a true/false/null word;
 * - values: a nested block mapping or sequence, `[]`, `{}`, a one-line single- or
 *   double-quoted scalar, a literal block scalar (`|` with optional chomping and indentation
 *   indicators), or a one-line plain scalar that is certainly a string, null, a boolean, a
 *   decimal integer of at most 18 digits or a decimal float;
 * - sequence items `- ` followed by a scalar or an inline block mapping (`- id: x`).
 * Anything else (flow collections with content, anchors, aliases, tags, folded or multi-line
 * scalars, explicit keys, documents markers, a duplicate key, nesting deeper than 64 levels)
 * returns None. tests/unit/thf/test_block_subset.py compares this reader with yaml-rs on
 * generated and mutated documents.
 *
 * `loads(text, capture)` also returns, for the root sections `capture` names, the text the
 * read tools' text filter searches (thf/capture.py): each record's parts joined by "\n",
 * the records joined by "\0", and each record's length, built from every record's mapping just
 * after it is read, while it is still in the processor's cache. A section whose records do
 * not have the expected shape is left out (the read tools then build its text themselves).
 *
 * Memory safety: the text's UTF-8 buffer ends with '\n' (checked first), and every scan
 * within a line stops at '\n', so no read goes past the buffer.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define MAX_DEPTH 64
#define MAX_KEY_LENGTH 128
#define MAX_NUMBER_LENGTH 64
#define KEY_SLOTS 512 /* power of two; keys beyond half of it are made, not cached */

#define MAX_CAPTURED_SECTIONS 8
#define MAX_PARTS 16

typedef struct {
    const char *text;
    Py_ssize_t length;
    PyObject *object;
    /* Per captured section: which part this key fills (-1: none), so a record's values are
     * matched to parts once per distinct key, not compared with every part each time. */
    signed char part[MAX_CAPTURED_SECTIONS];
    signed char column[MAX_CAPTURED_SECTIONS]; /* which column it fills (-1: none) */
} KeySlot;

/* A growable byte buffer (the scratch of rebuilt scalars, a section's search text). */
typedef struct {
    char *data;
    Py_ssize_t used;
    Py_ssize_t size;
} Buffer;

/* Rules of a captured part (thf/capture.py spells the same numbers). */
enum {
    PART_TEXT = 0,           /* required text */
    PART_TEXT_OR_EMPTY = 1,  /* text, "" when absent */
    PART_OPTIONAL = 2,       /* text, left out when absent or null */
    PART_ITEMS = 3,          /* a list of texts, each a part; nothing when absent or null */
    PART_LOWERCASE = 4,      /* required text, ASCII letters lower-cased (a severity) */
    PART_NESTED_TEXT_OR_EMPTY = 5, /* key.inner of a mapping: text, "" when absent; left
                                    * out when the mapping is absent or null */
};

#define MAX_COLUMNS 4

/* One captured column: a field of every record, as validation reads it (None when absent),
 * and, when every value is text or None, the same joined: "\0" before, between and after
 * the values, None as "" (what thf/columns.py keeps for first lookups). */
typedef struct {
    PyObject *key; /* interned, owned */
    PyObject *values;
    Buffer joined;
    int ascii;
    int joinable;
    PyObject *joined_text;
} Column;

typedef struct {
    int index;        /* its place in the parser's captures */
    PyObject *name;   /* borrowed from the spec */
    PyObject *keys[MAX_PARTS];
    PyObject *inner[MAX_PARTS];
    int rules[MAX_PARTS];
    int parts;
    Buffer text; /* the UTF-8 text so far */
    int ascii;
    int started;
    PyObject *lengths;
    PyObject *joined;
    Column columns[MAX_COLUMNS];
    int column_count;
    int usable;
} Capture;

typedef struct {
    const char *start;
    const char *end; /* one past the final '\n' */
    const char *p;   /* cursor */
    int depth;
    int out_of_subset; /* set when the text leaves the subset (no Python error is set) */
    Buffer scratch;
    KeySlot keys[KEY_SLOTS];
    int key_count;
    Capture captures[MAX_CAPTURED_SECTIONS];
    int capture_count;
    Capture *capturing; /* the section whose sequence is being read, if captured */
    PyObject *slots[MAX_PARTS]; /* the current record's captured values (borrowed) */
    PyObject *column_slots[MAX_COLUMNS];
} Parser;

/* Byte classes inside a plain scalar. */
enum {
    PLAIN_OK = 0,     /* printable ASCII that needs no look-around */
    PLAIN_END = 1,    /* '\n' */
    PLAIN_BAD = 2,    /* control characters, tab, CR, DEL: outside the subset */
    PLAIN_COLON = 3,  /* ':' (a key indicator when followed by a space or the line end) */
    PLAIN_HASH = 4,   /* '#' (a comment when after a space) */
    PLAIN_HIGH = 5,   /* a byte of a non-ASCII character */
};

static unsigned char plain_class[256];

static void init_classes(void) {
    for (int c = 0; c < 256; c++) {
        if (c == '\n') {
            plain_class[c] = PLAIN_END;
        } else if (c < 0x20 || c == 0x7F) {
            plain_class[c] = PLAIN_BAD;
        } else if (c == ':') {
            plain_class[c] = PLAIN_COLON;
        } else if (c == '#') {
            plain_class[c] = PLAIN_HASH;
        } else if (c >= 0x80) {
            plain_class[c] = PLAIN_HIGH;
        } else {
            plain_class[c] = PLAIN_OK;
        }
    }
}

static PyObject *outside(Parser *P) {
    P->out_of_subset = 1;
    return NULL;
}

/* A non-ASCII character the subset leaves to the full parser: C1 controls (U+0080-U+009F),
 * U+2028, U+2029, U+FEFF, U+FFFE, U+FFFF. `q` is the lead byte of a valid UTF-8 sequence. */
static int refused_character(const unsigned char *q) {
    if (q[0] == 0xC2) {
        return q[1] <= 0x9F;
    }
    if (q[0] == 0xE2) {
        return q[1] == 0x80 && (q[2] == 0xA8 || q[2] == 0xA9);
    }
    if (q[0] == 0xEF) {
        return (q[1] == 0xBB && q[2] == 0xBF) || (q[1] == 0xBF && (q[2] == 0xBE || q[2] == 0xBF));
    }
    return 0;
}

/* Length of the UTF-8 sequence whose lead byte is `lead` (the text is valid UTF-8). */
static int sequence_length(unsigned char lead) {
    if (lead >= 0xF0) {
        return 4;
    }
    if (lead >= 0xE0) {
        return 3;
    }
    return 2;
}

/* Whether [from, to) holds only characters the subset allows in scalars and comments: no
 * control character (tab and CR included), no DEL, none of the refused non-ASCII ones. */
static int allowed_text(const char *from, const char *to, int *ascii) {
    const unsigned char *q = (const unsigned char *)from;
    const unsigned char *stop = (const unsigned char *)to;
    int only_ascii = 1;
    while (q < stop) {
        unsigned char c = *q;
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F) {
                return 0;
            }
            q++;
        } else {
            if (refused_character(q)) {
                return 0;
            }
            only_ascii = 0;
            q += sequence_length(c);
        }
    }
    if (ascii != NULL) {
        *ascii = only_ascii;
    }
    return 1;
}

static PyObject *make_string(const char *from, Py_ssize_t length, int ascii) {
    if (ascii) {
        PyObject *text = PyUnicode_New(length, 127);
        if (text != NULL && length > 0) {
            memcpy(PyUnicode_DATA(text), from, (size_t)length);
        }
        return text;
    }
    return PyUnicode_DecodeUTF8(from, length, "strict");
}

/* ------------------------------------------------------------------------------------------ */
/* Buffers */

static int buffer_reserve(Buffer *B, Py_ssize_t more) {
    if (B->used + more <= B->size) {
        return 0;
    }
    Py_ssize_t size = B->size ? B->size : 256;
    while (size < B->used + more) {
        if (size > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return -1;
        }
        size *= 2;
    }
    char *grown = PyMem_Realloc(B->data, (size_t)size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    B->data = grown;
    B->size = size;
    return 0;
}

static int buffer_append(Buffer *B, const char *from, Py_ssize_t length) {
    if (length == 0) {
        return 0; /* the buffer may not exist yet */
    }
    if (buffer_reserve(B, length) < 0) {
        return -1;
    }
    memcpy(B->data + B->used, from, (size_t)length);
    B->used += length;
    return 0;
}

static int buffer_newlines(Buffer *B, Py_ssize_t count) {
    if (buffer_reserve(B, count) < 0) {
        return -1;
    }
    memset(B->data + B->used, '\n', (size_t)count);
    B->used += count;
    return 0;
}

static void buffer_free(Buffer *B) {
    PyMem_Free(B->data);
    B->data = NULL;
    B->used = B->size = 0;
}

/* Writes `code` as UTF-8 at `to`; returns the bytes written (1 to 4). */
static int utf8_encode(Py_UCS4 code, char *to) {
    if (code < 0x80) {
        to[0] = (char)code;
        return 1;
    }
    if (code < 0x800) {
        to[0] = (char)(0xC0 | (code >> 6));
        to[1] = (char)(0x80 | (code & 0x3F));
        return 2;
    }
    if (code < 0x10000) {
        to[0] = (char)(0xE0 | (code >> 12));
        to[1] = (char)(0x80 | ((code >> 6) & 0x3F));
        to[2] = (char)(0x80 | (code & 0x3F));
        return 3;
    }
    to[0] = (char)(0xF0 | (code >> 18));
    to[1] = (char)(0x80 | ((code >> 12) & 0x3F));
    to[2] = (char)(0x80 | ((code >> 6) & 0x3F));
    to[3] = (char)(0x80 | (code & 0x3F));
    return 4;
}

static int buffer_code_point(Buffer *B, Py_UCS4 code) {
    if (buffer_reserve(B, 4) < 0) {
        return -1;
    }
    B->used += utf8_encode(code, B->data + B->used);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Lines */

static int count_spaces(const char *q) {
    const char *from = q;
    while (*q == ' ') {
        q++;
    }
    return (int)(q - from);
}

static const char *line_end(const char *q, const char *end) {
    const char *found = memchr(q, '\n', (size_t)(end - q));
    return found; /* never NULL: the buffer ends with '\n' */
}

/* From the start of a line, skip blank lines and comment lines. Sets *indent to the spaces
 * before the first other line and returns its start, or P->end. Returns NULL (outside the
 * subset) for a comment with refused characters or a line indented with a tab. */
static const char *next_content_line(Parser *P, const char *q, int *indent) {
    while (q < P->end) {
        int spaces = count_spaces(q);
        char c = q[spaces];
        if (c == '\n') {
            q += spaces + 1;
            continue;
        }
        if (c == '#') {
            const char *eol = line_end(q + spaces, P->end);
            if (!allowed_text(q + spaces, eol, NULL)) {
                return NULL;
            }
            q = eol + 1;
            continue;
        }
        if ((unsigned char)c < 0x20) {
            return NULL; /* a tab or another control character in the indentation */
        }
        *indent = spaces;
        return q;
    }
    *indent = -1;
    return P->end;
}

/* After a one-line value: the next non-blank line, comments included, must not be indented
 * more than `limit` (it would continue the scalar or be an error the full parser reports). */
static int value_ends_cleanly(Parser *P, int limit) {
    const char *q = P->p;
    while (q < P->end) {
        int spaces = count_spaces(q);
        if (q[spaces] == '\n') {
            q += spaces + 1;
            continue;
        }
        return spaces <= limit;
    }
    return 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Keys */

static int is_key_start(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int is_key_char(char c) {
    return is_key_start(c) || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int is_special_word(const char *q, Py_ssize_t length) {
    static const char *const words[] = {"null", "Null", "NULL", "true", "True", "TRUE",
                                        "false", "False", "FALSE"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if ((Py_ssize_t)strlen(words[i]) == length && memcmp(words[i], q, (size_t)length) == 0) {
            return 1;
        }
    }
    return 0;
}

/* Scan a key at q; returns its length when q holds `key:` followed by a space or the line
 * end, else 0. */
static Py_ssize_t key_length_at(const char *q) {
    if (!is_key_start(*q)) {
        return 0;
    }
    const char *k = q + 1;
    while (is_key_char(*k)) {
        k++;
    }
    if (*k != ':' || (k[1] != ' ' && k[1] != '\n')) {
        return 0;
    }
    return k - q;
}

/* Which part of each captured section `key` fills, for its cache slot. */
static void fill_parts(Parser *P, KeySlot *entry) {
    for (int c = 0; c < MAX_CAPTURED_SECTIONS; c++) {
        entry->part[c] = -1;
        entry->column[c] = -1;
        if (c >= P->capture_count) {
            continue;
        }
        for (int i = 0; i < P->captures[c].parts; i++) {
            if (P->captures[c].keys[i] == entry->object) {
                entry->part[c] = (signed char)i;
            }
        }
        entry->column[c] = -1;
        for (int i = 0; i < P->captures[c].column_count; i++) {
            if (P->captures[c].columns[i].key == entry->object) {
                entry->column[c] = (signed char)i;
            }
        }
    }
}

/* The one key object for these bytes: keys repeat in every record, so each is made once
 * per read (and interned, so pydantic's field lookups compare by identity). `*slot` is its
 * cache entry, or NULL when the cache is full (the key then fills no captured part). */
static PyObject *key_object(Parser *P, const char *q, Py_ssize_t length, KeySlot **slot) {
    unsigned long hash = 2166136261UL;
    for (Py_ssize_t i = 0; i < length; i++) {
        hash = (hash ^ (unsigned char)q[i]) * 16777619UL;
    }
    size_t index = hash & (KEY_SLOTS - 1);
    while (P->keys[index].object != NULL) {
        KeySlot *entry = &P->keys[index];
        if (entry->length == length && memcmp(entry->text, q, (size_t)length) == 0) {
            Py_INCREF(entry->object);
            *slot = entry;
            return entry->object;
        }
        index = (index + 1) & (KEY_SLOTS - 1);
    }
    PyObject *key = PyUnicode_FromStringAndSize(q, length);
    if (key == NULL) {
        return NULL;
    }
    PyUnicode_InternInPlace(&key);
    *slot = NULL;
    if (P->key_count < KEY_SLOTS / 2) {
        KeySlot *entry = &P->keys[index];
        entry->text = q;
        entry->length = length;
        entry->object = key;
        Py_INCREF(key);
        fill_parts(P, entry);
        P->key_count++;
        *slot = entry;
    }
    return key;
}

/* ------------------------------------------------------------------------------------------ */
/* Scalars */

static int is_digit(char c) {
    return c >= '0' && c <= '9';
}

/* Whether every character could be part of some YAML number, in any notation yaml-rs
 * knows (signs, underscores, radix prefixes, hex digits, exponents, .inf and .nan). */
static int only_number_characters(const char *q, Py_ssize_t length) {
    for (Py_ssize_t i = 0; i < length; i++) {
        char c = q[i];
        if (!(is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
              strchr("_+-.xXoOiInN", c) != NULL) || c == '\0') {
            return 0;
        }
    }
    return 1;
}

/* A plain scalar starting with a digit or '-': an integer, a float, a calendar date, or
 * outside the subset. `q` and `length` exclude trailing spaces. */
static PyObject *plain_number(Parser *P, const char *q, Py_ssize_t length) {
    if (length == 10 && is_digit(q[0]) && is_digit(q[1]) && is_digit(q[2]) && is_digit(q[3]) &&
        q[4] == '-' && is_digit(q[5]) && is_digit(q[6]) && q[7] == '-' && is_digit(q[8]) &&
        is_digit(q[9])) {
        return make_string(q, length, 1); /* yaml-rs keeps dates as text (parse_datetime off) */
    }
    if (length > MAX_NUMBER_LENGTH) {
        return outside(P);
    }
    Py_ssize_t i = 0;
    int negative = 0;
    if (q[0] == '-') {
        negative = 1;
        i = 1;
    }
    Py_ssize_t whole_start = i;
    while (i < length && is_digit(q[i])) {
        i++;
    }
    Py_ssize_t whole_digits = i - whole_start;
    if (whole_digits == 0 || (whole_digits > 1 && q[whole_start] == '0')) {
        return outside(P); /* `-x`, `012` and the like: left to the full parser */
    }
    if (i == length) {
        if (whole_digits > 18) {
            return outside(P);
        }
        long long value = 0;
        for (Py_ssize_t k = whole_start; k < length; k++) {
            value = value * 10 + (q[k] - '0');
        }
        return PyLong_FromLongLong(negative ? -value : value);
    }
    int is_float = 0;
    if (q[i] == '.') {
        i++;
        Py_ssize_t fraction_start = i;
        while (i < length && is_digit(q[i])) {
            i++;
        }
        if (i == fraction_start) {
            return outside(P);
        }
        is_float = 1;
    }
    if (i < length && (q[i] == 'e' || q[i] == 'E')) {
        i++;
        if (i < length && (q[i] == '-' || q[i] == '+')) {
            i++;
        }
        Py_ssize_t exponent_start = i;
        int exponent = 0;
        while (i < length && is_digit(q[i]) && i - exponent_start < 4) {
            exponent = exponent * 10 + (q[i] - '0');
            i++;
        }
        /* Far exponents (overflow, subnormals) are left to the full parser. */
        if (i == exponent_start || exponent > 300) {
            return outside(P);
        }
        is_float = 1;
    }
    if (!is_float || i != length) {
        return outside(P);
    }
    char digits[MAX_NUMBER_LENGTH + 1];
    memcpy(digits, q, (size_t)length);
    digits[length] = '\0';
    char *stop = NULL;
    double value = PyOS_string_to_double(digits, &stop, NULL);
    if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return outside(P);
    }
    if (stop != digits + length) {
        return outside(P);
    }
    return PyFloat_FromDouble(value);
}

/* A one-line plain scalar at P->p; leaves P->p after its '\n'. */
static PyObject *plain_scalar(Parser *P) {
    const char *from = P->p;
    const unsigned char *q = (const unsigned char *)from;
    int ascii = 1;
    for (;;) {
        unsigned char kind = plain_class[*q];
        if (kind == PLAIN_OK) {
            q++;
            continue;
        }
        if (kind == PLAIN_END) {
            break;
        }
        if (kind == PLAIN_COLON) {
            if (q[1] == ' ' || q[1] == '\n') {
                return outside(P);
            }
            q++;
            continue;
        }
        if (kind == PLAIN_HASH) {
            if ((const char *)q > from && q[-1] == ' ') {
                return outside(P); /* a trailing comment */
            }
            q++;
            continue;
        }
        if (kind == PLAIN_HIGH) {
            if (refused_character(q)) {
                return outside(P);
            }
            ascii = 0;
            q += sequence_length(*q);
            continue;
        }
        return outside(P); /* PLAIN_BAD */
    }
    const char *eol = (const char *)q;
    const char *last = eol;
    while (last > from && last[-1] == ' ') {
        last--;
    }
    Py_ssize_t length = last - from;
    P->p = eol + 1;
    if (length == 0) {
        return outside(P);
    }
    char first = from[0];
    if (is_key_start(first)) {
        if (length <= 5) {
            if (length == 4 && (memcmp(from, "null", 4) == 0 || memcmp(from, "Null", 4) == 0 ||
                                memcmp(from, "NULL", 4) == 0)) {
                Py_RETURN_NONE;
            }
            if (length == 4 && (memcmp(from, "true", 4) == 0 || memcmp(from, "True", 4) == 0 ||
                                memcmp(from, "TRUE", 4) == 0)) {
                Py_RETURN_TRUE;
            }
            if (length == 5 && (memcmp(from, "false", 5) == 0 ||
                                memcmp(from, "False", 5) == 0 || memcmp(from, "FALSE", 5) == 0)) {
                Py_RETURN_FALSE;
            }
        }
        return make_string(from, length, ascii);
    }
    if (is_digit(first) || (first == '-' && length > 1 && is_digit(from[1]))) {
        if (!ascii || !only_number_characters(from, length)) {
            /* "50% of traffic", "3rd party", "24/7": no YAML number holds such a character */
            return make_string(from, length, ascii);
        }
        return plain_number(P, from, length);
    }
    if (first == '~' && length == 1) {
        Py_RETURN_NONE;
    }
    if ((unsigned char)first >= 0x80 || first == '/' || first == '(' || first == '$' ||
        first == '^' || first == '=' || first == ';' || first == '<' || first == ')' ||
        first == '\\') {
        return make_string(from, length, ascii);
    }
    return outside(P); /* indicators, signs, dots, underscores: left to the full parser */
}

/* After a closing quote: spaces, then the line end. */
static int quoted_line_ends(Parser *P, const char *q) {
    while (*q == ' ') {
        q++;
    }
    if (*q != '\n') {
        return 0;
    }
    P->p = q + 1;
    return 1;
}

/* Whether the quoted text [from, close) holds only allowed characters and its closing quote
 * ends the line (then P->p moves past it). */
static int quoted_text_ends_line(Parser *P, const char *from, const char *close, int *ascii) {
    return allowed_text(from, close, ascii) && quoted_line_ends(P, close + 1);
}

static PyObject *single_quoted(Parser *P) {
    const char *from = P->p + 1;
    const char *q = from;
    int doubled = 0;
    for (;;) {
        if (*q == '\n') {
            return outside(P); /* multi-line */
        }
        if (*q == '\'') {
            if (q[1] == '\'') {
                doubled = 1;
                q += 2;
                continue;
            }
            break;
        }
        q++;
    }
    const char *close = q;
    int ascii;
    if (!quoted_text_ends_line(P, from, close, &ascii)) {
        return outside(P);
    }
    if (!doubled) {
        return make_string(from, close - from, ascii);
    }
    P->scratch.used = 0;
    const char *r = from;
    while (r < close) {
        const char *quote = memchr(r, '\'', (size_t)(close - r));
        const char *stop = quote ? quote : close;
        if (buffer_append(&P->scratch, r, stop - r) < 0) {
            return NULL;
        }
        if (quote == NULL) {
            break;
        }
        if (buffer_append(&P->scratch, "'", 1) < 0) {
            return NULL;
        }
        r = quote + 2;
    }
    return make_string(P->scratch.data, P->scratch.used, ascii);
}

static int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

static PyObject *double_quoted(Parser *P) {
    const char *from = P->p + 1;
    const char *q = from;
    int escaped = 0;
    /* First pass: find the closing quote on this line. */
    for (;;) {
        if (*q == '\n') {
            return outside(P);
        }
        if (*q == '\\') {
            escaped = 1;
            if (q[1] == '\n') {
                return outside(P); /* a line continuation */
            }
            q += 2;
            continue;
        }
        if (*q == '"') {
            break;
        }
        q++;
    }
    const char *close = q;
    int ascii;
    if (!quoted_text_ends_line(P, from, close, &ascii)) {
        return outside(P);
    }
    if (!escaped) {
        return make_string(from, close - from, ascii);
    }
    P->scratch.used = 0;
    const char *r = from;
    while (r < close) {
        const char *slash = memchr(r, '\\', (size_t)(close - r));
        const char *stop = slash ? slash : close;
        if (buffer_append(&P->scratch, r, stop - r) < 0) {
            return NULL;
        }
        if (slash == NULL) {
            break;
        }
        char e = slash[1];
        const char *simple = NULL;
        int digits = 0;
        switch (e) {
        case '0': simple = "\0"; break;
        case 'a': simple = "\a"; break;
        case 'b': simple = "\b"; break;
        case 't': simple = "\t"; break;
        case 'n': simple = "\n"; break;
        case 'v': simple = "\v"; break;
        case 'f': simple = "\f"; break;
        case 'r': simple = "\r"; break;
        case 'e': simple = "\x1b"; break;
        case ' ': simple = " "; break;
        case '"': simple = "\""; break;
        case '/': simple = "/"; break;
        case '\\': simple = "\\"; break;
        case 'x': digits = 2; break;
        case 'u': digits = 4; break;
        case 'U': digits = 8; break;
        default:
            return outside(P); /* \N, \_, \L, \P and unknown escapes: the full parser */
        }
        if (simple != NULL) {
            if (buffer_append(&P->scratch, simple, 1) < 0) {
                return NULL;
            }
            r = slash + 2;
            continue;
        }
        Py_UCS4 code = 0;
        for (int k = 0; k < digits; k++) {
            const char *h = slash + 2 + k;
            if (h >= close) {
                return outside(P);
            }
            int v = hex_value(*h);
            if (v < 0) {
                return outside(P);
            }
            code = code * 16 + (Py_UCS4)v;
        }
        if ((code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) {
            return outside(P);
        }
        if (buffer_code_point(&P->scratch, code) < 0) {
            return NULL;
        }
        if (code >= 0x80) {
            ascii = 0;
        }
        r = slash + 2 + digits;
    }
    return make_string(P->scratch.data, P->scratch.used, ascii);
}

/* A literal block scalar whose header starts at P->p (the '|'); `parent` is the indentation
 * of the node that holds it (the mapping's, or the sequence's dash column). */
static PyObject *literal_block(Parser *P, int parent) {
    const char *q = P->p + 1;
    char chomp = 'c'; /* clip */
    int explicit_indent = 0;
    for (int k = 0; k < 2; k++) {
        if ((*q == '-' || *q == '+') && chomp == 'c') {
            chomp = *q;
            q++;
        } else if (*q >= '1' && *q <= '9' && explicit_indent == 0) {
            explicit_indent = *q - '0';
            q++;
        }
    }
    while (*q == ' ') {
        q++;
    }
    if (*q != '\n') {
        return outside(P); /* a comment or anything else after the header */
    }
    q++;
    int indent;
    if (explicit_indent) {
        indent = parent + explicit_indent;
    } else {
        /* The first non-blank line sets the indentation; a leading blank line with more
         * spaces than it is an error in YAML. */
        int most_blank = 0;
        const char *r = q;
        indent = -1;
        while (r < P->end) {
            int spaces = count_spaces(r);
            if (r[spaces] == '\n') {
                if (spaces > most_blank) {
                    most_blank = spaces;
                }
                r += spaces + 1;
                continue;
            }
            indent = spaces;
            break;
        }
        if (indent <= parent || most_blank > indent) {
            return outside(P); /* empty content, or an error: the full parser decides */
        }
    }
    P->scratch.used = 0;
    int ascii = 1;
    Py_ssize_t blanks = 0;
    int lines = 0;
    while (q < P->end) {
        int spaces = count_spaces(q);
        if (q[spaces] == '\n') {
            if (spaces > indent) {
                return outside(P); /* a line of spaces beyond the indentation is content */
            }
            blanks++;
            q += spaces + 1;
            continue;
        }
        if (spaces < indent) {
            break;
        }
        const char *text = q + indent;
        const char *eol = line_end(text, P->end);
        int line_ascii;
        if (!allowed_text(text, eol, &line_ascii)) {
            return outside(P);
        }
        ascii &= line_ascii;
        if (lines > 0 && buffer_newlines(&P->scratch, 1) < 0) {
            return NULL;
        }
        if (blanks > 0 && buffer_newlines(&P->scratch, blanks) < 0) {
            return NULL;
        }
        blanks = 0;
        if (buffer_append(&P->scratch, text, eol - text) < 0) {
            return NULL;
        }
        lines++;
        q = eol + 1;
    }
    if (lines == 0) {
        return outside(P);
    }
    if (chomp == 'c' && buffer_newlines(&P->scratch, 1) < 0) {
        return NULL;
    }
    if (chomp == '+' && buffer_newlines(&P->scratch, 1 + blanks) < 0) {
        return NULL;
    }
    P->p = q;
    return make_string(P->scratch.data, P->scratch.used, ascii);
}

/* `[]` or `{}` followed by spaces and the line end. */
static PyObject *empty_collection(Parser *P, char open) {
    char close = open == '[' ? ']' : '}';
    const char *q = P->p + 1;
    if (*q != close) {
        return outside(P);
    }
    if (!quoted_line_ends(P, q + 1)) {
        return outside(P);
    }
    return open == '[' ? PyList_New(0) : PyDict_New();
}

/* A value written on the line of its key or dash, at P->p. `parent` is the indentation of
 * the holding node; the value must end on its line (or its block scalar's last line). */
static PyObject *inline_value(Parser *P, int parent) {
    PyObject *value;
    switch (*P->p) {
    case '|':
        value = literal_block(P, parent);
        break;
    case '\'':
        value = single_quoted(P);
        break;
    case '"':
        value = double_quoted(P);
        break;
    case '[':
    case '{':
        value = empty_collection(P, *P->p);
        break;
    default:
        value = plain_scalar(P);
        break;
    }
    if (value != NULL && !value_ends_cleanly(P, parent)) {
        Py_DECREF(value);
        return outside(P);
    }
    return value;
}

/* ------------------------------------------------------------------------------------------ */
/* Search text capture: UTF-8 bytes appended as records are read, one string made at the end */

static PyObject *empty_text;

/* Appends text as UTF-8 (lower-casing ASCII letters when asked), after a line break unless
 * it is the record's first part. Returns -1 with an error set on failure. */
static int capture_text_into(Buffer *text, int *ascii, PyObject *value, int lowercase,
                             int *parts, Py_ssize_t *length) {
    Py_ssize_t characters = PyUnicode_GET_LENGTH(value);
    int kind = PyUnicode_KIND(value);
    const void *data = PyUnicode_DATA(value);
    /* At most 4 bytes a character, and a line break. */
    if (characters > (PY_SSIZE_T_MAX - 1) / 4) {
        PyErr_NoMemory();
        return -1;
    }
    if (buffer_reserve(text, characters * 4 + 1) < 0) {
        return -1;
    }
    char *to = text->data + text->used;
    if (*parts > 0) {
        *to++ = '\n';
        *length += 1;
    }
    if (PyUnicode_IS_ASCII(value)) {
        if (lowercase) {
            const char *from = (const char *)data;
            for (Py_ssize_t i = 0; i < characters; i++) {
                char c = from[i];
                to[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
            }
        } else {
            memcpy(to, data, (size_t)characters);
        }
        to += characters;
    } else {
        *ascii = 0;
        for (Py_ssize_t i = 0; i < characters; i++) {
            to += utf8_encode(PyUnicode_READ(kind, data, i), to);
        }
    }
    text->used = to - text->data;
    *length += characters;
    *parts += 1;
    return 0;
}

/* The part's value: text, a list, Py_None to leave it out, or NULL when the record has not
 * the expected shape (the section is then dropped). A borrowed reference. */
static PyObject *part_value(Capture *C, int index, PyObject *value, int *error) {
    int rule = C->rules[index];
    if (rule == PART_NESTED_TEXT_OR_EMPTY) {
        if (value == NULL || value == Py_None) {
            return Py_None;
        }
        if (!PyDict_CheckExact(value)) {
            return NULL;
        }
        value = PyDict_GetItemWithError(value, C->inner[index]);
        if (value == NULL && PyErr_Occurred()) {
            *error = 1;
            return NULL;
        }
        rule = PART_TEXT_OR_EMPTY;
    }
    if (value == NULL) {
        if (rule == PART_TEXT_OR_EMPTY) {
            return empty_text;
        }
        return rule == PART_OPTIONAL || rule == PART_ITEMS ? Py_None : NULL;
    }
    if (value == Py_None) {
        return rule == PART_OPTIONAL || rule == PART_ITEMS ? Py_None : NULL;
    }
    if (rule == PART_ITEMS) {
        return PyList_CheckExact(value) ? value : NULL;
    }
    if (!PyUnicode_CheckExact(value) || (rule == PART_LOWERCASE && !PyUnicode_IS_ASCII(value))) {
        return NULL;
    }
    return value;
}

/* Adds one record's value to each captured column (None when absent). */
static int capture_columns(Capture *C, PyObject *const *column_slots) {
    for (int i = 0; i < C->column_count; i++) {
        Column *column = &C->columns[i];
        PyObject *value = column_slots[i] != NULL ? column_slots[i] : Py_None;
        if (PyList_Append(column->values, value) < 0) {
            return -1;
        }
        if (!column->joinable) {
            continue;
        }
        if (PyUnicode_CheckExact(value)) {
            int parts = 0;
            Py_ssize_t length = 0;
            if (capture_text_into(&column->joined, &column->ascii, value, 0, &parts, &length) < 0) {
                return -1;
            }
        } else if (value != Py_None) {
            column->joinable = 0;
            continue;
        }
        if (buffer_append(&column->joined, "", 1) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Adds one record's parts, from the values its mapping kept in `slots` as it was read;
 * drops the section when the record is not as expected. */
static int capture_record(Capture *C, PyObject *record, PyObject *const *slots,
                          PyObject *const *column_slots) {
    if (!C->usable) {
        return 0;
    }
    if (!PyDict_CheckExact(record)) {
        C->usable = 0;
        return 0;
    }
    if (capture_columns(C, column_slots) < 0) {
        return -1;
    }
    if (C->parts == 0) {
        return 0;
    }
    Py_ssize_t mark = C->text.used;
    if (PyList_GET_SIZE(C->lengths) > 0 && buffer_append(&C->text, "", 1) < 0) {
        return -1; /* the NUL between records */
    }
    int parts = 0;
    Py_ssize_t length = 0;
    for (int i = 0; i < C->parts; i++) {
        int error = 0;
        PyObject *value = part_value(C, i, slots[i], &error);
        if (value == NULL) {
            if (error) {
                return -1;
            }
            C->usable = 0;
            C->text.used = mark;
            return 0;
        }
        if (PyList_CheckExact(value)) {
            for (Py_ssize_t k = 0; k < PyList_GET_SIZE(value); k++) {
                PyObject *item = PyList_GET_ITEM(value, k);
                if (!PyUnicode_CheckExact(item)) {
                    C->usable = 0;
                    C->text.used = mark;
                    return 0;
                }
                if (capture_text_into(&C->text, &C->ascii, item, 0, &parts, &length) < 0) {
                    return -1;
                }
            }
        } else if (value != Py_None &&
                   capture_text_into(&C->text, &C->ascii, value, C->rules[i] == PART_LOWERCASE,
                                     &parts, &length) < 0) {
            return -1;
        }
    }
    PyObject *size = PyLong_FromSsize_t(length);
    if (size == NULL) {
        return -1;
    }
    int failed = PyList_Append(C->lengths, size);
    Py_DECREF(size);
    return failed;
}

/* When the section's sequence has been read: its text in one string. */
static int capture_finish(Capture *C) {
    if (C->usable && C->joined == NULL && C->parts > 0) {
        C->joined = make_string(C->text.data, C->text.used, C->ascii);
        if (C->joined == NULL) {
            return -1;
        }
    }
    buffer_free(&C->text);
    for (int i = 0; C->usable && i < C->column_count; i++) {
        Column *column = &C->columns[i];
        if (column->joinable && PyList_GET_SIZE(column->values) > 0) {
            column->joined_text = make_string(column->joined.data, column->joined.used,
                                              column->ascii);
            if (column->joined_text == NULL) {
                return -1;
            }
        }
        buffer_free(&column->joined);
    }
    return 0;
}

/* The capture for root key `key`, starting it; NULL when the key is not captured. */
static Capture *capture_for(Parser *P, PyObject *key) {
    for (int i = 0; i < P->capture_count; i++) {
        Capture *C = &P->captures[i];
        if (C->name == key || PyUnicode_Compare(C->name, key) == 0) {
            if (C->started || !C->usable) {
                return NULL; /* read once only (a repeated key is declined anyway) */
            }
            C->started = 1;
            C->ascii = 1;
            C->lengths = PyList_New(0);
            if (C->lengths == NULL) {
                return NULL;
            }
            for (int k = 0; k < C->column_count; k++) {
                Column *column = &C->columns[k];
                column->values = PyList_New(0);
                column->ascii = 1;
                column->joinable = 1;
                if (column->values == NULL || buffer_append(&column->joined, "", 1) < 0) {
                    return NULL;
                }
            }
            return C;
        }
    }
    return NULL;
}

/* Reads the capture spec: {section: ((key, rule) | (key, rule, inner), ...)}. */
static int read_capture_spec(Parser *P, PyObject *spec) {
    PyObject *name;
    PyObject *parts = NULL;
    Py_ssize_t position = 0;
    PyObject *both;
    while (PyDict_Next(spec, &position, &name, &both)) {
        PyObject *columns = NULL;
        if (PyTuple_Check(both) && PyTuple_GET_SIZE(both) == 2) {
            parts = PyTuple_GET_ITEM(both, 0);
            columns = PyTuple_GET_ITEM(both, 1);
        }
        if (P->capture_count >= MAX_CAPTURED_SECTIONS || !PyUnicode_Check(name) ||
            columns == NULL || !PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) > MAX_PARTS ||
            !PyTuple_Check(columns) || PyTuple_GET_SIZE(columns) > MAX_COLUMNS) {
            PyErr_SetString(PyExc_ValueError,
                            "capture: {section: (((key, rule[, inner]), ...), (column key, ...))}");
            return -1;
        }
        Capture *C = &P->captures[P->capture_count];
        C->index = P->capture_count++;
        C->name = name;
        C->usable = 1;
        C->parts = (int)PyTuple_GET_SIZE(parts);
        C->column_count = (int)PyTuple_GET_SIZE(columns);
        for (int i = 0; i < C->column_count; i++) {
            PyObject *key = PyTuple_GET_ITEM(columns, i);
            if (!PyUnicode_Check(key)) {
                PyErr_SetString(PyExc_ValueError, "capture: a column is a key");
                return -1;
            }
            Py_INCREF(key);
            PyUnicode_InternInPlace(&key);
            C->columns[i].key = key;
        }
        for (int i = 0; i < C->parts; i++) {
            PyObject *part = PyTuple_GET_ITEM(parts, i);
            if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) < 2 ||
                PyTuple_GET_SIZE(part) > 3 || !PyUnicode_Check(PyTuple_GET_ITEM(part, 0)) ||
                !PyLong_Check(PyTuple_GET_ITEM(part, 1))) {
                PyErr_SetString(PyExc_ValueError, "capture: a part is (key, rule[, inner])");
                return -1;
            }
            /* Interned, as the reader's keys are: a record's keys are matched by identity. */
            PyObject *key = PyTuple_GET_ITEM(part, 0);
            Py_INCREF(key);
            PyUnicode_InternInPlace(&key);
            C->keys[i] = key;
            C->rules[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(part, 1));
            C->inner[i] = PyTuple_GET_SIZE(part) == 3 ? PyTuple_GET_ITEM(part, 2) : NULL;
            if (C->rules[i] < PART_TEXT || C->rules[i] > PART_NESTED_TEXT_OR_EMPTY ||
                (C->rules[i] == PART_NESTED_TEXT_OR_EMPTY) != (C->inner[i] != NULL) ||
                (C->inner[i] != NULL && !PyUnicode_Check(C->inner[i]))) {
                PyErr_SetString(PyExc_ValueError, "capture: an unknown rule");
                return -1;
            }
        }
    }
    return 0;
}

static void release_captures(Parser *P) {
    for (int i = 0; i < P->capture_count; i++) {
        for (int k = 0; k < MAX_PARTS; k++) {
            Py_CLEAR(P->captures[i].keys[k]);
        }
        buffer_free(&P->captures[i].text);
        Py_CLEAR(P->captures[i].lengths);
        Py_CLEAR(P->captures[i].joined);
        for (int k = 0; k < MAX_COLUMNS; k++) {
            Column *column = &P->captures[i].columns[k];
            Py_CLEAR(column->key);
            Py_CLEAR(column->values);
            Py_CLEAR(column->joined_text);
            buffer_free(&column->joined);
        }
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Collections */

static PyObject *block_mapping(Parser *P, int indent);
static PyObject *block_sequence(Parser *P, int indent);

static int is_dash(const char *q) {
    return q[0] == '-' && (q[1] == ' ' || q[1] == '\n');
}

enum { ENTRY_NONE, ENTRY_SAME, ENTRY_OUTSIDE };

/* After an entry of a collection in column `indent`: ENTRY_SAME with P->p at the next
 * line's first character when that line is in the same column; ENTRY_NONE with P->p at the
 * start of a less indented line (or the end) when the collection is over; ENTRY_OUTSIDE
 * for a more indented line or a refused comment. */
static int next_entry(Parser *P, int indent) {
    int next_indent;
    const char *line = next_content_line(P, P->p, &next_indent);
    if (line == NULL) {
        return ENTRY_OUTSIDE;
    }
    if (line == P->end || next_indent < indent) {
        P->p = line;
        return ENTRY_NONE;
    }
    if (next_indent > indent) {
        return ENTRY_OUTSIDE;
    }
    P->p = line + next_indent;
    return ENTRY_SAME;
}

/* What follows `key:` at the end of its line: a nested collection, or null. */
static PyObject *nested_value(Parser *P, int indent) {
    int next_indent;
    const char *line = next_content_line(P, P->p, &next_indent);
    if (line == NULL) {
        return outside(P);
    }
    if (line == P->end || next_indent < indent ||
        (next_indent == indent && !is_dash(line + next_indent))) {
        Py_RETURN_NONE; /* an empty value reads as null */
    }
    P->p = line + next_indent;
    if (is_dash(P->p)) {
        return block_sequence(P, next_indent);
    }
    return block_mapping(P, next_indent);
}

/* A block mapping whose first key is at P->p, in column `indent`. */
static PyObject *block_mapping(Parser *P, int indent) {
    if (++P->depth > MAX_DEPTH) {
        return outside(P);
    }
    Capture *record_of = P->depth == 3 ? P->capturing : NULL; /* a captured section's record */
    PyObject *mapping = PyDict_New();
    if (mapping == NULL) {
        return NULL;
    }
    for (;;) {
        const char *key_start = P->p;
        Py_ssize_t length = key_length_at(key_start);
        if (length == 0 || length > MAX_KEY_LENGTH || is_special_word(key_start, length)) {
            goto outside_subset;
        }
        KeySlot *key_slot;
        PyObject *key = key_object(P, key_start, length, &key_slot);
        if (key == NULL) {
            goto error;
        }
        const char *q = key_start + length + 1;
        while (*q == ' ') {
            q++;
        }
        Capture *capture = NULL;
        int root = P->depth == 1;
        if (root && P->capture_count > 0) {
            capture = capture_for(P, key);
            if (capture == NULL && PyErr_Occurred()) {
                Py_DECREF(key);
                goto error;
            }
            P->capturing = capture;
        }
        PyObject *value;
        if (*q == '\n') {
            P->p = q + 1;
            value = nested_value(P, indent);
        } else if (*q == '#') {
            Py_DECREF(key);
            goto outside_subset;
        } else {
            P->p = q;
            value = inline_value(P, indent);
        }
        if (root) {
            P->capturing = NULL;
        }
        if (value != NULL && capture != NULL && !PyList_CheckExact(value) && value != Py_None) {
            capture->usable = 0; /* not a section of records: validation will say so */
        }
        if (value != NULL && capture != NULL && capture_finish(capture) < 0) {
            Py_CLEAR(value);
        }
        if (value == NULL) {
            Py_DECREF(key);
            goto error;
        }
        /* A key already present leaves the size alone (comparing the kept value with the
         * new one would miss a repeated null or boolean, which are shared objects). */
        Py_ssize_t size = PyDict_GET_SIZE(mapping);
        PyObject *kept = PyDict_SetDefault(mapping, key, value);
        Py_DECREF(key);
        Py_DECREF(value);
        if (kept == NULL) {
            goto error;
        }
        if (PyDict_GET_SIZE(mapping) == size) {
            goto outside_subset; /* a duplicate key: the full parser reports it */
        }
        if (record_of != NULL) {
            int part = key_slot != NULL ? key_slot->part[record_of->index] : -1;
            int column = key_slot != NULL ? key_slot->column[record_of->index] : -1;
            if (key_slot == NULL) {
                /* Past the key cache (hundreds of distinct keys): compare with each. */
                for (int i = 0; i < record_of->parts; i++) {
                    if (record_of->keys[i] == key) {
                        part = i;
                    }
                }
                for (int i = 0; i < record_of->column_count; i++) {
                    if (record_of->columns[i].key == key) {
                        column = i;
                    }
                }
            }
            if (part >= 0) {
                P->slots[part] = value; /* the mapping holds it */
            }
            if (column >= 0) {
                P->column_slots[column] = value;
            }
        }
        int next = next_entry(P, indent);
        if (next == ENTRY_OUTSIDE) {
            goto outside_subset;
        }
        if (next == ENTRY_NONE) {
            break;
        }
    }
    P->depth--;
    return mapping;
outside_subset:
    P->out_of_subset = 1;
error:
    Py_DECREF(mapping);
    return NULL;
}

/* A block sequence whose first dash is at P->p, in column `indent`. */
static PyObject *block_sequence(Parser *P, int indent) {
    if (++P->depth > MAX_DEPTH) {
        return outside(P);
    }
    PyObject *sequence = PyList_New(0);
    if (sequence == NULL) {
        return NULL;
    }
    for (;;) {
        const char *dash = P->p;
        const char *q = dash + 1;
        if (*q != ' ') {
            goto outside_subset; /* `-` alone: a null or nested item */
        }
        while (*q == ' ') {
            q++;
        }
        PyObject *item;
        if (*q == '\n' || *q == '#' || is_dash(q)) {
            goto outside_subset;
        }
        if (P->capturing != NULL && P->depth == 2) {
            /* A new record: none of its values read yet (an item written `{}` reads none). */
            memset(P->slots, 0, sizeof(P->slots));
            memset(P->column_slots, 0, sizeof(P->column_slots));
        }
        P->p = q;
        if (key_length_at(q) > 0) {
            item = block_mapping(P, indent + (int)(q - dash)); /* the key's column */
        } else {
            item = inline_value(P, indent);
        }
        if (item == NULL) {
            goto error;
        }
        if (P->capturing != NULL && P->depth == 2 &&
            capture_record(P->capturing, item, P->slots, P->column_slots) < 0) {
            Py_DECREF(item);
            goto error;
        }
        int failed = PyList_Append(sequence, item);
        Py_DECREF(item);
        if (failed < 0) {
            goto error;
        }
        int next = next_entry(P, indent);
        if (next == ENTRY_OUTSIDE) {
            goto outside_subset;
        }
        if (next == ENTRY_NONE) {
            break;
        }
        if (!is_dash(P->p)) {
            /* A key in the same column: the sequence was the value of the mapping there. */
            P->p -= indent;
            break;
        }
    }
    P->depth--;
    return sequence;
outside_subset:
    P->out_of_subset = 1;
error:
    Py_DECREF(sequence);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Module */

static PyObject *parse_document(Parser *P) {
    int indent;
    const char *line = next_content_line(P, P->start, &indent);
    if (line == NULL || line == P->end || indent != 0) {
        return outside(P);
    }
    P->p = line;
    PyObject *root = block_mapping(P, 0);
    if (root == NULL) {
        return NULL;
    }
    if (P->p != P->end) {
        Py_DECREF(root); /* a line the root mapping could not take */
        return outside(P);
    }
    return root;
}

/* (document, {section: (search text, lengths)}, {section: {key: (values, joined or None)}})
 * for the sections read whole and as expected. */
static PyObject *captured_results(Parser *P, PyObject *document) {
    PyObject *texts = PyDict_New();
    PyObject *columns = PyDict_New();
    PyObject *result = NULL;
    if (texts == NULL || columns == NULL) {
        goto done;
    }
    for (int i = 0; i < P->capture_count; i++) {
        Capture *C = &P->captures[i];
        if (!C->usable || !C->started) {
            continue;
        }
        if (C->joined != NULL) {
            PyObject *pair = PyTuple_Pack(2, C->joined, C->lengths);
            int failed = pair == NULL || PyDict_SetItem(texts, C->name, pair) < 0;
            Py_XDECREF(pair);
            if (failed) {
                goto done;
            }
        }
        if (C->column_count == 0) {
            continue;
        }
        PyObject *section = PyDict_New();
        if (section == NULL || PyDict_SetItem(columns, C->name, section) < 0) {
            Py_XDECREF(section);
            goto done;
        }
        Py_DECREF(section); /* held by `columns` */
        for (int k = 0; k < C->column_count; k++) {
            Column *column = &C->columns[k];
            PyObject *joined = column->joined_text != NULL ? column->joined_text : Py_None;
            PyObject *pair = PyTuple_Pack(2, column->values, joined);
            int failed = pair == NULL || PyDict_SetItem(section, column->key, pair) < 0;
            Py_XDECREF(pair);
            if (failed) {
                goto done;
            }
        }
    }
    result = PyTuple_Pack(3, document, texts, columns);
done:
    Py_XDECREF(texts);
    Py_XDECREF(columns);
    return result;
}

static PyObject *loads(PyObject *module, PyObject *const *args, Py_ssize_t count) {
    (void)module;
    if (count < 1 || count > 2) {
        PyErr_SetString(PyExc_TypeError, "loads(text, capture=None) takes one or two arguments");
        return NULL;
    }
    PyObject *text = args[0];
    PyObject *spec = count == 2 ? args[1] : Py_None;
    if (!PyUnicode_Check(text) || (spec != Py_None && !PyDict_Check(spec))) {
        PyErr_SetString(PyExc_TypeError, "loads() takes a str and an optional dict");
        return NULL;
    }
    Py_ssize_t length;
    const char *data = PyUnicode_AsUTF8AndSize(text, &length);
    if (data == NULL) {
        PyErr_Clear(); /* lone surrogates: the full parser decides */
        Py_RETURN_NONE;
    }
    if (length == 0 || data[length - 1] != '\n' || memchr(data, '\0', (size_t)length) != NULL) {
        Py_RETURN_NONE;
    }
    Parser *P = PyMem_Calloc(1, sizeof(Parser));
    if (P == NULL) {
        return PyErr_NoMemory();
    }
    P->start = data;
    P->end = data + length;
    PyObject *result = NULL;
    if (spec == Py_None || read_capture_spec(P, spec) == 0) {
        result = parse_document(P);
    }
    if (result != NULL && spec != Py_None) {
        PyObject *captured = captured_results(P, result);
        Py_DECREF(result);
        result = captured;
    }
    release_captures(P);
    for (int slot = 0; slot < KEY_SLOTS; slot++) {
        Py_XDECREF(P->keys[slot].object);
    }
    buffer_free(&P->scratch);
    int out_of_subset = P->out_of_subset;
    PyMem_Free(P);
    if (result == NULL && out_of_subset && !PyErr_Occurred()) {
        Py_RETURN_NONE;
    }
    return result;
}

static PyMethodDef methods[] = {
    {"loads", (PyCFunction)(void (*)(void))loads, METH_FASTCALL,
     "loads(text, capture=None, /)\n--\n\nThe parsed document when `text` is inside the plain "
     "block subset (what yaml-rs would return), else None; with `capture`, (document, "
     "{section: (search text, lengths)})."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    "stockade.thf._blockyaml",
    "Compiled reader for the plain block-YAML subset that .thf writers emit.",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC PyInit__blockyaml(void) {
    init_classes();
    empty_text = PyUnicode_New(0, 0);
    if (empty_text == NULL) {
        return NULL;
    }
    return PyModule_Create(&module_definition);
}
