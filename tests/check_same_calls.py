#!/usr/bin/env python3
"""Two traced runs that must make the same calls.

usage: check_same_calls.py SKELGEN A.skm B.skm

Every rank of B must make A's calls in A's order, compared as
check_roundtrip.py compares a skeleton's with its application's: function,
communicator, root, datatype and every parameter value of that rank, left
out only what timing decides (the source a wildcard receive matched, the
order inside a communication step) and call sites. Used on one skeleton
written two ways (skelgen generate and --expand-runs): its kept runs
written as shared functions must make the very calls written out in full.
"""
import sys

from check_roundtrip import compare_ranks, dump, per_rank_calls


def main():
    skelgen, a_skm, b_skm = sys.argv[1:4]
    want, got = per_rank_calls(dump(skelgen, a_skm)), per_rank_calls(dump(skelgen, b_skm))
    total = compare_ranks(want, got, "the first", "the second")
    print(f"ok: {total} calls over {len(want)} ranks, the same in both")


if __name__ == "__main__":
    main()
