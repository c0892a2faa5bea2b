package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/lockwatch/lockwatch/lease"
)

// keyJSON is inspect's --json object. Numbers, not duration strings, so
// that jq and a test can compare them.
type keyJSON struct {
	Key       string `json:"key"`
	KeyHash   string `json:"key_hash"`
	Namespace string `json:"namespace"`
	Permit    *int   `json:"permit,omitempty"`
	Held      bool   `json:"held"`
	TTLMillis int64  `json:"ttl_ms"`
	Fence     int64  `json:"fence"`
	Barred    int    `json:"barred"`
	Holder    string `json:"holder"`
	// HolderReplica is the holder's lease.Config.Replica, "" for none.
	HolderReplica string `json:"holder_replica"`
}

// view is one lease inspect read: the key's, or permit's (noPermit for
// the key's), a line of a --permits list of key when listed.
type view struct {
	ns, key string
	info    lease.KeyInfo
	permit  int
	listed  bool
}

// print prints v as JSON, as a block, or as a line of a list after its
// header (first).
func (v view) print(w io.Writer, asJSON, first bool) error {
	switch {
	case asJSON:
		return v.printJSON(w)
	case v.listed:
		if first {
			v.printHead(w)
		}
		v.printLine(w)
	default:
		v.printHead(w)
		v.printBlock(w)
	}
	return nil
}

func (v view) printJSON(w io.Writer) error {
	info := v.info
	ttl := info.TTL.Milliseconds()
	if info.TTL < 0 {
		ttl = -1
	}
	o := keyJSON{Key: info.Key, KeyHash: info.KeyHash, Namespace: v.ns, Held: info.Held, TTLMillis: ttl,
		Fence: info.Fence, Barred: info.Barred, Holder: info.Holder, HolderReplica: info.HolderReplica}
	if v.permit != noPermit {
		o.Permit = &v.permit
	}
	return json.NewEncoder(w).Encode(o)
}

// printHead names the lease, or the key whose permits the list shows.
func (v view) printHead(w io.Writer) {
	key := v.info.Key
	if v.listed {
		key = v.key
	}
	if key == "" {
		key = "(given by its hash)"
	}
	fmt.Fprintf(w, "key:       %s\n", key)
	fmt.Fprintf(w, "key hash:  %s\n", v.info.KeyHash)
	fmt.Fprintf(w, "namespace: %s\n", v.ns)
	if v.permit != noPermit && !v.listed {
		fmt.Fprintf(w, "permit:    %d\n", v.permit)
	}
}

func (v view) printBlock(w io.Writer) {
	info := v.info
	if info.Held {
		fmt.Fprintf(w, "held:      yes, by %s\n", holderText(info))
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

// printLine is a permit of a --permits list on one line.
func (v view) printLine(w io.Writer) {
	info := v.info
	line := fmt.Sprintf("permit %-3d held by %s, ttl %v", v.permit, holderText(info), info.TTL.Round(time.Millisecond))
	switch {
	case info.Held && info.TTL < 0:
		line = fmt.Sprintf("permit %-3d held by %s, no expiry (not written by lockwatch)", v.permit, holderText(info))
	case !info.Held:
		line = fmt.Sprintf("permit %-3d free", v.permit)
	}
	if info.Fence > 0 {
		line += fmt.Sprintf(", fence %d", info.Fence)
	} else {
		line += ", no fence remembered"
	}
	fmt.Fprintln(w, line)
}

// holderText names a held lease's holder: its hash (what release --force
// --holder takes), and its replica when its Locker has a Config.Replica.
func holderText(info lease.KeyInfo) string {
	if info.HolderReplica == "" {
		return "holder " + info.Holder
	}
	return "holder " + info.Holder + " on replica " + info.HolderReplica
}
