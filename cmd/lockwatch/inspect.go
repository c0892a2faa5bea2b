package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/lockwatch/lockwatch/lease"
)

var inspectCmd = &command{
	name:     "inspect",
	synopsis: "show what Redis holds for a key: holder, TTL left, fence",
	usage: `
Usage: lockwatch inspect --key K [--namespace NS] [--json] [connection flags]

Shows what Redis holds for the lease on K: whether it is held, the TTL left,
the newest fencing token minted for it, how many owner tokens are barred on
its fence record, and a short hash of the holder's owner token (the token
itself never leaves Redis). It only reads; it is for people, not for
deciding who may work: only the fence at the resource decides which writes
count.

With --json it prints one JSON object:
  {"key":..., "key_hash":..., "namespace":..., "held":bool, "ttl_ms":n, "fence":n, "barred":n, "holder":"..."}
ttl_ms is 0 when the key is free and -1 when it is held without an expiry
(written by something other than lockwatch).

Exit statuses:
  0   the key was inspected (held or not)
  64  usage error
  69  Redis unreachable, or the read failed`,
	setup: func(fs *flag.FlagSet) func([]string, io.Writer, io.Writer) error {
		var conn connFlags
		conn.register(fs)
		var k keyFlags
		k.register(fs)
		asJSON := fs.Bool("json", false, "print one JSON object")
		return func(args []string, stdout, stderr io.Writer) error {
			if err := k.checkKeyOnly("inspect", args); err != nil {
				return err
			}
			lk, closeAll, err := connectLocker(&conn, given(fs), stderr, "inspect", lease.Config{Namespace: k.namespace})
			if err != nil {
				return err
			}
			defer closeAll()
			info, err := lk.Inspect(context.Background(), k.key)
			if err != nil {
				return fail(exitUnavailable, "%v", err)
			}
			if *asJSON {
				return printKeyJSON(stdout, k.namespace, info)
			}
			printKey(stdout, k.namespace, info)
			return nil
		}
	},
}

// keyJSON is inspect's --json object. Numbers, not duration strings, so
// that jq and a test can compare them.
type keyJSON struct {
	Key       string `json:"key"`
	KeyHash   string `json:"key_hash"`
	Namespace string `json:"namespace"`
	Held      bool   `json:"held"`
	TTLMillis int64  `json:"ttl_ms"`
	Fence     int64  `json:"fence"`
	Barred    int    `json:"barred"`
	Holder    string `json:"holder"`
}

func printKeyJSON(w io.Writer, ns string, info lease.KeyInfo) error {
	ttl := info.TTL.Milliseconds()
	if info.TTL < 0 {
		ttl = -1
	}
	return json.NewEncoder(w).Encode(keyJSON{Key: info.Key, KeyHash: info.KeyHash, Namespace: ns, Held: info.Held, TTLMillis: ttl,
		Fence: int64(info.Fence), Barred: info.Barred, Holder: info.Holder})
}

func printKey(w io.Writer, ns string, info lease.KeyInfo) {
	fmt.Fprintf(w, "key:       %s\n", info.Key)
	fmt.Fprintf(w, "key hash:  %s\n", info.KeyHash)
	fmt.Fprintf(w, "namespace: %s\n", ns)
	if info.Held {
		fmt.Fprintf(w, "held:      yes, by holder %s\n", info.Holder)
	} else {
		fmt.Fprintln(w, "held:      no")
	}
	switch {
	case info.TTL < 0:
		fmt.Fprintln(w, "ttl:       none (the key has no expiry: not written by lockwatch)")
	case info.Held:
		fmt.Fprintf(w, "ttl:       %v\n", info.TTL.Round(time.Millisecond))
	}
	if info.Fence > 0 {
		fmt.Fprintf(w, "fence:     %d (the next acquire gets a larger one)\n", info.Fence)
	} else {
		fmt.Fprintln(w, "fence:     none remembered (the next acquire mints a fresh one)")
	}
	if info.Barred < 0 {
		fmt.Fprintln(w, "barred:    unknown (the fence record was not written by lockwatch)")
	} else {
		fmt.Fprintf(w, "barred:    %d owner tokens\n", info.Barred)
	}
}
