package lease

import (
	_ "embed"
	"strconv"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/script"
)

// One Lua script per operation, run through internal/script, each behind
// record.lua (the fence record's functions). One type per script builds
// its call: its fields are the script's KEYS and ARGV, in the order of the
// script's header.
var (
	//go:embed scripts/record.lua
	recordSrc string
	//go:embed scripts/acquire.lua
	acquireSrc string
	//go:embed scripts/renew.lua
	renewSrc string
	//go:embed scripts/release.lua
	releaseSrc string
	//go:embed scripts/inspect.lua
	inspectSrc string
	//go:embed scripts/force.lua
	forceSrc string
	//go:embed scripts/refresh.lua
	refreshSrc string

	acquireScript = script.New(recordSrc + acquireSrc)
	renewScript   = script.New(recordSrc + renewSrc)
	releaseScript = script.New(recordSrc + releaseSrc)
	inspectScript = script.New(recordSrc + inspectSrc)
	forceScript   = script.New(recordSrc + forceSrc)
	refreshScript = script.New(recordSrc + refreshSrc)
)

// acquireArgs is one attempt of an Acquire (acquire.lua). ttl, retention
// and queue are milliseconds, boxed once where they can be.
type acquireArgs struct {
	keys           leasekeys.Keys // Lock, Fence, Queue, Entries
	owner          string         // the attempt's own owner token
	ttl, retention any
	queue          any      // a held key queues the attempt, its entry live so long; nil or 0: no queue
	channel        string   // the Locker's grant channel, stored in the entry ("": none)
	ghosts         []string // the Locker's ghosts of the key (ghosts.go)
}

// notQueued is the queue argument of an attempt that does not queue.
var notQueued any = int64(0)

func (a acquireArgs) call() script.Call {
	k, queue := a.keys, a.queue
	if queue == nil {
		queue = notQueued
	}
	if len(a.ghosts) == 0 {
		return acquireScript.Call(4, k.Lock, k.Fence, k.Queue, k.Entries, a.owner, a.ttl, a.retention, queue, a.channel)
	}
	args := make([]any, 0, 9+len(a.ghosts))
	args = append(args, k.Lock, k.Fence, k.Queue, k.Entries, a.owner, a.ttl, a.retention, queue, a.channel)
	for _, g := range a.ghosts {
		args = append(args, g)
	}
	return acquireScript.Call(4, args...)
}

// release is the end of the attempt: its release, or its clean-up.
func (a acquireArgs) release() releaseArgs {
	return releaseArgs{keys: a.keys, owner: a.owner, retention: a.retention}
}

// refresh is the refresh of the attempt's queue entry.
func (a acquireArgs) refresh() refreshArgs {
	return refreshArgs{keys: a.keys, owner: a.owner, queue: a.queue, retention: a.retention}
}

// renewal is the renewal of the lease the attempt took.
func (a acquireArgs) renewal(fence int64) renewArgs {
	return renewArgs{keys: a.keys, owner: a.owner, ttl: a.ttl, retention: a.retention, fence: fence}
}

// renewArgs is a lease's renewal (renew.lua).
type renewArgs struct {
	keys           leasekeys.Keys // Lock, Fence
	owner          string
	ttl, retention any
	fence          int64
}

func (a renewArgs) call() script.Call {
	return renewScript.Call(2, a.keys.Lock, a.keys.Fence, a.owner, a.ttl, a.retention, strconv.FormatInt(a.fence, 10))
}

// refreshArgs is a queued attempt's refresh of its entry (refresh.lua).
type refreshArgs struct {
	keys      leasekeys.Keys // Lock, Fence, Queue, Entries
	owner     string
	queue     any // the entry's new lifetime in ms, as acquireArgs.queue
	retention any
}

func (a refreshArgs) call() script.Call {
	k := a.keys
	return refreshScript.Call(4, k.Lock, k.Fence, k.Queue, k.Entries, a.owner, a.queue, a.retention)
}

// releaseArgs is the end of an attempt (release.lua): a release, a
// clean-up, or a queued attempt's leave.
type releaseArgs struct {
	keys      leasekeys.Keys // Lock, Fence, Queue, Entries
	owner     string
	retention any
}

func (a releaseArgs) call() script.Call {
	k := a.keys
	return releaseScript.Call(4, k.Lock, k.Fence, k.Queue, k.Entries, a.owner, a.retention)
}

// forceArgs is an administrator's force release (force.lua).
type forceArgs struct {
	keys      leasekeys.Keys // Lock, Fence, Queue, Entries
	retention any
	holder    string // the holder's hash, as Inspect gives it
}

func (a forceArgs) call() script.Call {
	k := a.keys
	return forceScript.Call(4, k.Lock, k.Fence, k.Queue, k.Entries, a.retention, a.holder)
}

// inspectArgs is a read of a key (inspect.lua).
type inspectArgs struct {
	keys leasekeys.Keys // Lock, Fence
}

func (a inspectArgs) call() script.Call {
	return inspectScript.Call(2, a.keys.Lock, a.keys.Fence)
}
