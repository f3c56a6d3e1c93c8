/*
 * Command-line parsing shared by the example programs. A program walks its
 * arguments with ex_args_next and asks, for each one, which of its options
 * it is; values are read by helpers that know what a good value looks like.
 * Every mistake is a usage error: one line on stderr naming the argument
 * ("pingpong: -i -5: iterations must be a positive integer"), then
 * "try 'pingpong -h'", and exit status 2. Arguments are parsed before
 * anything else happens, so a mistake never needs a running job to show.
 */
#ifndef PSC_EXAMPLE_ARGS_H
#define PSC_EXAMPLE_ARGS_H

#include <stddef.h>
#include <stdio.h>

/* Where a program is in its argv. Set up by ex_args_init, then read-only. */
struct ex_args {
	const char *prog;	   /* the name messages start with */
	void (*usage)(FILE *f); /* the program's usage text, for -h */
	int argc;
	char **argv;
	int next;	  /* index of the next argument to read */
	const char *cur;  /* the option ex_args_next last returned */
	int end_of_opts;  /* "--" was seen */
};

void ex_args_init(struct ex_args *a, const char *prog, void (*usage)(FILE *),
		  int argc, char **argv);

/*
 * The next option, or NULL when there is none left. -h and --help print
 * the usage on stdout and exit 0; "--" ends the options; a word that is
 * not an option is a usage error (no example takes operands).
 */
const char *ex_args_next(struct ex_args *a);

/* Is the current option exactly opt (an option without a value)? */
int ex_flag(const struct ex_args *a, const char *opt);

/*
 * If the current option is opt, its value: the next argument, or for a
 * one-letter option also the rest of the word ("-m4K"). NULL if the
 * current option is another one. A missing value is a usage error.
 */
const char *ex_value(struct ex_args *a, const char *opt);

/* The current option is none of the program's: a usage error. */
void ex_unknown(const struct ex_args *a) __attribute__((noreturn));

/* Print "PROG: MESSAGE" and the hint on stderr, and exit 2. */
void ex_usage_error(const struct ex_args *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/*
 * The value helpers below take the name of what is parsed, an option
 * ("-i") or an environment variable ("DMLC_NUM_WORKER"), and name a bad
 * value as "-i -5" or "DMLC_NUM_WORKER=-5". On a bad value they do not
 * return.
 */

/*
 * A decimal integer from lo to hi, with nothing after it. what says what
 * it counts, for the message: "iterations".
 */
int ex_int(const struct ex_args *a, const char *name, const char *val,
	   int lo, int hi, const char *what);

/*
 * A size in bytes: decimal digits, then optionally K, M or G (binary, any
 * case), and nothing else. Sizes that do not fit in a size_t are refused.
 */
size_t ex_size(const struct ex_args *a, const char *name, const char *val);

/* The index of val in names[0..n); what names the kind: "type". */
int ex_choice(const struct ex_args *a, const char *name, const char *val,
	      const char *const *names, int n, const char *what);

/*
 * The check of a size sweep from -m MIN to -M MAX: MIN must not exceed
 * MAX. min_arg and max_arg are the options' values as given, or NULL when
 * the default was used, which the message then says.
 */
void ex_size_order(const struct ex_args *a, size_t min, const char *min_arg,
		   size_t max, const char *max_arg);

/* size spelled as an argument would spell it ("4M"), in buf. */
const char *ex_size_text(size_t size, char *buf, size_t len);

#endif /* PSC_EXAMPLE_ARGS_H */
