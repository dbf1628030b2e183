#ifndef SLUICE_STRBUF_H
#define SLUICE_STRBUF_H
/*
 * Growable byte buffers, and the binary-safe argument vector of one Redis
 * command built from them.  Both own their memory; *_free accepts a zeroed
 * struct and leaves one.
 */
#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer; `p` is NUL-terminated after every append (NULL while empty). */
struct strbuf {
	char *p;
	size_t len, cap;
};
/* Append `n` bytes; 0 or -ENOMEM (buffer unchanged). */
int strbuf_add(struct strbuf *b, const void *s, size_t n);
/* Cut back to `len` bytes (<= b->len). */
void strbuf_truncate(struct strbuf *b, size_t len);
void strbuf_free(struct strbuf *b);

/*
 * Arguments of one command (or of a script call's KEYS or ARGV), each any
 * bytes.  An argument is whatever was appended to `buf` between
 * cmdargs_begin() and cmdargs_end(), or one cmdargs_add*() call.
 */
struct cmdargs {
	struct strbuf buf;
	size_t *off, *len;       /* argument i is buf.p[off[i] .. off[i] + len[i]) */
	size_t n, cap;
	size_t start;            /* buf.len at the last cmdargs_begin */
	const char **view;       /* filled by cmdargs_view; valid until the next append */
	size_t *vlen;
	size_t viewcap;
};
/* Append one argument of `n` bytes.  0 or -ENOMEM (nothing appended). */
int cmdargs_add(struct cmdargs *a, const void *s, size_t n);
/* A C string; a decimal integer; a double with 17 significant digits (%.17g). */
int cmdargs_str(struct cmdargs *a, const char *s);
int cmdargs_int(struct cmdargs *a, int64_t v);
int cmdargs_double(struct cmdargs *a, double v);
/* Start an argument: returns the buffer to append its bytes to (strbuf_add). */
struct strbuf *cmdargs_begin(struct cmdargs *a);
/*
 * End the argument begun by cmdargs_begin (`rc` is the result of the appends):
 * 0, or `rc`/-ENOMEM with the partial bytes dropped and nothing appended.
 */
int cmdargs_end(struct cmdargs *a, int rc);
/* Drop every argument; keep the allocations. */
void cmdargs_reset(struct cmdargs *a);
void cmdargs_free(struct cmdargs *a);
/*
 * argv/lens of `head`'s arguments followed by `tail`'s (may be NULL), in
 * head's view arrays: *argv and *lens are valid until head or tail changes.
 * Returns the count, or -ENOMEM.
 */
int cmdargs_view(struct cmdargs *head, const struct cmdargs *tail, const char *const **argv,
		 const size_t **lens);

#endif
