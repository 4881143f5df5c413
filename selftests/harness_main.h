/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RS_TEST_MAIN: every selftest's main().  The kselftest harness of 6.1 (taken from linux-source at
 * build time) runs every test; this picks some first, with the options later harnesses have:
 *   -f FIXTURE   -v VARIANT   -t TEST   (each may repeat; a test runs when it matches every kind
 *                                        given: -f pair -v rdma4 -t oob_inline)
 *   -l           list the tests as FIXTURE.VARIANT.TEST and exit
 * Include after kselftest_harness.h, at the end of the file, instead of TEST_HARNESS_MAIN.
 */
#ifndef RDMASOCK_HARNESS_MAIN_H
#define RDMASOCK_HARNESS_MAIN_H

#include <getopt.h>

/*
 * As TEST_HARNESS_MAIN: the last constructor of the file tells the harness in which order the
 * tests were registered, so they run in the order of the file.
 */
static void __attribute__((constructor)) rs_constructor_order_last(void)
{
	if (!__constructor_order)
		__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD;
}

struct rs_pick {
	const char *want[3][64];	/* fixture, variant, test names */
	int n[3];
};

static bool rs_pick_match(const struct rs_pick *p, int kind, const char *name)
{
	if (!p->n[kind])
		return true;
	for (int i = 0; i < p->n[kind]; i++)
		if (!strcmp(p->want[kind][i], name))
			return true;
	return false;
}

/* Keep on the harness's lists only what @p picks: what is left is what test_harness_run() runs. */
static void rs_pick_apply(const struct rs_pick *p)
{
	struct __fixture_metadata *f, *fhead = NULL, **fnext = &fhead;

	for (f = __fixture_list; f; f = f->next) {
		struct __fixture_variant_metadata *v, *vhead = NULL, **vnext = &vhead;
		struct __test_metadata *t, *thead = NULL, **tnext = &thead;
		bool had_variants = f->variant;

		if (!rs_pick_match(p, 0, f->name))
			continue;
		for (v = f->variant; v; v = v->next)
			if (rs_pick_match(p, 1, v->name)) {
				*vnext = v;
				vnext = &v->next;
			}
		*vnext = NULL;
		/* (A fixture without variants runs its tests once; with none left, never.) */
		if (had_variants ? !vhead : p->n[1] != 0)
			continue;
		for (t = f->tests; t; t = t->next)
			if (rs_pick_match(p, 2, t->name)) {
				*tnext = t;
				tnext = &t->next;
			}
		*tnext = NULL;
		if (!thead)
			continue;
		f->variant = vhead;
		f->tests = thead;
		*fnext = f;
		fnext = &f->next;
	}
	*fnext = NULL;
	__fixture_list = fhead;
}

static void rs_pick_list(void)
{
	struct __fixture_variant_metadata none = { .name = "" }, *v;
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	for (f = __fixture_list; f; f = f->next)
		for (v = f->variant ?: &none; v; v = v->next)
			for (t = f->tests; t; t = t->next)
				printf("%s%s%s.%s\n", f->name, *v->name ? "." : "", v->name, t->name);
}

static int rs_test_main(int argc, char **argv)
{
	static const char kinds[] = "fvt";
	struct rs_pick pick = {};
	bool list = false;
	int opt;

	while ((opt = getopt(argc, argv, "f:v:t:l")) != -1) {
		const char *k = strchr(kinds, opt);

		if (opt == 'l') {
			list = true;
		} else if (k && opt != ':' && pick.n[k - kinds] < 64) {
			pick.want[k - kinds][pick.n[k - kinds]++] = optarg;
		} else {
			fprintf(stderr, "usage: %s [-f FIXTURE] [-v VARIANT] [-t TEST] ... [-l]\n",
				argv[0]);
			return 2;
		}
	}
	rs_pick_apply(&pick);
	if (list) {
		rs_pick_list();
		return 0;
	}
	if (!__fixture_list) {
		fprintf(stderr, "%s: no test matches\n", argv[0]);
		return 2;
	}
	return test_harness_run(argc, argv);
}

#define RS_TEST_MAIN int main(int argc, char **argv) { return rs_test_main(argc, argv); }

#endif /* RDMASOCK_HARNESS_MAIN_H */
