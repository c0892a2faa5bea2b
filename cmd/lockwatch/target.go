package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/leaseadmin"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/permits"
)

// targetFlags name what inspect and release --force look at: the lease on
// a key, or one of its permits (--permit), or with inspect all of its
// first N (--permits), the key given as is (--key) or as the hash that
// spans, logs and the debug page show (--key-hash). A permit has names of
// its own in Redis (leasekeys.OfSlot), so its key, K#i, given to --key
// would name another lease.
type targetFlags struct {
	key, hash, namespace string
	permit, permits      int
}

// noPermit is --permit's default: the key's own lease.
const noPermit = -1

func (f *targetFlags) register(fs *flag.FlagSet, listing bool) {
	fs.StringVar(&f.key, "key", "", "the lease's `key` (this or --key-hash is required)")
	fs.StringVar(&f.hash, "key-hash", "", "the key's `hash` (32 hex digits), as spans, logs and the debug page show it, instead of --key")
	fs.StringVar(&f.namespace, "namespace", defaultNamespace, "the `prefix` of the lease's Redis keys")
	f.permit = noPermit
	fs.Func("permit", "permit `i` of the key's semaphore (lockwatch run --permits, package permits) instead of the key's lease", func(v string) error {
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= permits.MaxLimit {
			return fmt.Errorf("must be 0 to %d", permits.MaxLimit-1)
		}
		f.permit = i
		return nil
	})
	if listing {
		fs.IntVar(&f.permits, "permits", 0, "every permit of the key's semaphore of `N` permits, 0 to N-1, one line each")
	}
}

// check is the check of a subcommand that takes a target and no
// arguments.
func (f *targetFlags) check(cmd string, args []string) error {
	switch {
	case (f.key == "") == (f.hash == ""):
		return usageErr(cmd, "give --key or --key-hash, one of them")
	case f.hash != "" && !leasekeys.ValidHash(f.hash):
		return usageErr(cmd, "--key-hash %q is not a key hash: %d lower-case hex digits, as the debug page shows", f.hash, leasekeys.HashLen)
	case f.namespace == "":
		return usageErr(cmd, "--namespace must not be empty")
	case f.permit != noPermit && f.permits != 0:
		return usageErr(cmd, "--permit names one permit, --permits lists them: give one")
	case f.permits < 0 || f.permits > permits.MaxLimit:
		return usageErr(cmd, "--permits %d: must be 1 to %d", f.permits, permits.MaxLimit)
	case len(args) > 0:
		return usageErr(cmd, "unexpected argument %q", args[0])
	}
	return nil
}

// targets are the leases the flags name: the key's, one permit, or the
// first --permits.
func (f *targetFlags) targets() []leaseadmin.Target {
	names := leasekeys.OfHash(f.namespace, f.hash)
	if f.key != "" {
		names = leasekeys.Of(f.namespace, f.key)
	}
	switch {
	case f.permits > 0:
		all := make([]leaseadmin.Target, f.permits)
		for i := range all {
			all[i] = f.slot(names, i)
		}
		return all
	case f.permit != noPermit:
		return []leaseadmin.Target{f.slot(names, f.permit)}
	}
	return []leaseadmin.Target{{Key: f.key, Names: names}}
}

func (f *targetFlags) slot(names leasekeys.Keys, i int) leaseadmin.Target {
	t := leaseadmin.Target{Names: names.Slot(i)}
	if f.key != "" {
		t.Key = permits.Key(f.key, i)
	}
	return t
}

// label names the target in messages: its key, or its hash, and the
// permit.
func (f *targetFlags) label() string {
	l := f.key
	if f.key == "" {
		l = "key hash " + f.hash
	}
	if f.permit != noPermit {
		l = fmt.Sprintf("permit %d of %s", f.permit, l)
	}
	return l
}

// inspectTarget reads t as lease.Locker.Inspect reads a key.
func inspectTarget(ctx context.Context, lk *lease.Locker, t leaseadmin.Target) (lease.KeyInfo, error) {
	info, err := leaseadmin.Inspect(lk, ctx, t)
	if err != nil {
		return lease.KeyInfo{}, err
	}
	return info.(lease.KeyInfo), nil
}

// forceTarget takes t from holder as lease.Locker.ForceRelease takes a
// key.
func forceTarget(ctx context.Context, lk *lease.Locker, t leaseadmin.Target, holder string) (lease.KeyInfo, error) {
	info, err := leaseadmin.ForceRelease(lk, ctx, t, holder)
	ki, _ := info.(lease.KeyInfo)
	return ki, err
}

// neverSeen tells whether Redis has nothing of t: no lock, no fence
// record, no waiter. info is what Inspect read; only when it shows
// nothing does this look for the rest.
func neverSeen(ctx context.Context, client redis.UniversalClient, info lease.KeyInfo, t leaseadmin.Target) (bool, error) {
	if info.Held || info.Fence != 0 || info.Barred != 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	n, err := client.Exists(ctx, t.Names.Lock, t.Names.Fence, t.Names.Queue, t.Names.Entries).Result()
	return n == 0, err
}
