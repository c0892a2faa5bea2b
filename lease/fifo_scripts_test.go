package lease

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/script"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// The wait queue's scripts, run directly through their arg builders: what
// the FIFO model says (model/README.md, "The wait queue"), step by step.

const (
	fifoTTL   = int64(60000) // the lease's, in ms
	fifoEntry = int64(60000) // a waiter's entry TTL, in ms
)

// fifoKey is one key of a real redis-server, and the grant channels of
// two Lockers, subscribed: an owner's attempts name the channel of the
// Locker it is in (lockers, 0 unless set).
type fifoKey struct {
	t       *testing.T
	ctx     context.Context
	c       *redis.Client
	keys    leasekeys.Keys
	chans   [2]string
	lockers map[string]int
	sub     *redis.PubSub
	on      []string // the channels of the messages published() returned last
}

func newFIFOKey(t *testing.T) *fifoKey {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c := redistest.Start(t).Client(t)
	k := &fifoKey{t: t, ctx: ctx, c: c, keys: leasekeys.Of("fifo", t.Name()), lockers: map[string]int{}}
	k.chans = [2]string{leasekeys.GrantChannel("fifo", "locker0"), leasekeys.GrantChannel("fifo", "locker1")}
	k.sub = c.Subscribe(ctx, k.chans[:]...)
	t.Cleanup(func() { _ = k.sub.Close() })
	for range k.chans {
		_, err := k.sub.Receive(ctx)
		require.NoError(t, err)
	}
	return k
}

func (k *fifoKey) attempt(owner string, entry int64) acquireArgs {
	return acquireArgs{keys: k.keys, owner: owner, ttl: fifoTTL, retention: int64(3600000), queue: entry, channel: k.chans[k.lockers[owner]]}
}

func (k *fifoKey) run(call script.Call) *redis.Cmd { return script.RunOne(k.ctx, k.c, call) }

func (k *fifoKey) acquire(owner string, entry int64) []any {
	res, err := k.run(k.attempt(owner, entry).call()).Slice()
	require.NoError(k.t, err)
	return res
}

func (k *fifoKey) release(owner string) int64 {
	n, err := k.run(k.attempt(owner, 0).release().call()).Int64()
	require.NoError(k.t, err)
	return n
}

func (k *fifoKey) refresh(owner string) []any {
	res, err := k.run(k.attempt(owner, fifoEntry).refresh().call()).Slice()
	require.NoError(k.t, err)
	return res
}

// fence acquires the free key for owner and returns its fence.
func (k *fifoKey) fence(owner string) int64 {
	res := k.acquire(owner, fifoEntry)
	require.Len(k.t, res, 2)
	require.Equal(k.t, int64(1), res[0], "%s acquires the free key", owner)
	return res[1].(int64)
}

// queued acquires the held key for owner and checks it is queued at place.
func (k *fifoKey) queued(owner string, place int64) {
	res := k.acquire(owner, fifoEntry)
	require.Len(k.t, res, 4, "queued: %v", res)
	assert.Equal(k.t, int64(2), res[0])
	assert.Positive(k.t, res[1], "the holder's PTTL")
	assert.Equal(k.t, place, res[2], "%s's place", owner)
	assert.Equal(k.t, []any{""}, res[3:], "a holder's token without '@' names no replica")
}

func (k *fifoKey) queue() []string { return k.c.LRange(k.ctx, k.keys.Queue, 0, -1).Val() }

func (k *fifoKey) lock() string { return k.c.Get(k.ctx, k.keys.Lock).Val() }

// published returns what was published on the grant channels so far
// (and the channel of each in k.on).
func (k *fifoKey) published() []string {
	require.NoError(k.t, k.sub.Ping(k.ctx))
	var got []string
	k.on = nil
	for {
		msg, err := k.sub.ReceiveTimeout(k.ctx, 10*time.Second)
		require.NoError(k.t, err)
		switch m := msg.(type) {
		case *redis.Pong:
			return got
		case *redis.Message:
			got = append(got, m.Payload)
			k.on = append(k.on, m.Channel)
		}
	}
}

// granted checks that the one message published is a grant to owner, on
// the grant channel of owner's Locker, with a fence above after, and
// returns the fence.
func (k *fifoKey) granted(owner string, after int64) int64 {
	msgs := k.published()
	require.Len(k.t, msgs, 1, "one grant: %q", msgs)
	assert.Equal(k.t, k.chans[k.lockers[owner]], k.on[0], "on %s's Locker's channel", owner)
	who, digits, _ := strings.Cut(msgs[0], " ")
	fence, err := strconv.ParseInt(digits, 10, 64)
	require.NoError(k.t, err, "the grant %q", msgs[0])
	assert.Equal(k.t, owner, who)
	assert.Greater(k.t, fence, after, "a fresh fence, above the last")
	assert.Equal(k.t, owner, k.lock())
	pttl := k.c.PTTL(k.ctx, k.keys.Lock).Val()
	assert.Greater(k.t, pttl, time.Duration(fifoTTL-5000)*time.Millisecond, "the lease TTL of the entry")
	assert.Equal(k.t, []any{int64(1), fence}, k.refresh(owner), "the refresh says granted, with the fence")
	return fence
}

func TestFIFOGrantsInArrivalOrder(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.queued("b", 1)
	k.queued("c", 2)
	assert.Equal(t, []string{"b", "c"}, k.queue())
	assert.Len(t, k.c.HGetAll(k.ctx, k.keys.Entries).Val(), 2)
	for _, key := range []string{k.keys.Queue, k.keys.Entries} {
		pttl := k.c.PTTL(k.ctx, key).Val()
		assert.True(t, pttl > 0 && pttl <= time.Duration(fifoEntry)*time.Millisecond, "%s expires with its entries: %v", key, pttl)
	}
	rec, err := leasekeys.ParseRecord(k.c.Get(k.ctx, k.keys.Fence).Val())
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "b"}, rec.Contended, "a queued attempt is barred '~'")
	res := k.acquire("b", fifoEntry)
	assert.Equal(t, []any{int64(2), int64(0)}, []any{res[0], res[2]}, "a copy of b, queued, answers already queued")
	assert.Equal(t, []string{"b", "c"}, k.queue(), "and queues nothing more")

	assert.Equal(t, int64(1), k.release("a"))
	fb := k.granted("b", f)
	assert.Equal(t, []string{"c"}, k.queue())
	assert.Equal(t, int64(1), k.release("b"))
	k.granted("c", fb)
	assert.Empty(t, k.queue())
	assert.Zero(t, k.c.Exists(k.ctx, k.keys.Queue, k.keys.Entries).Val(), "nothing left behind")
	assert.Equal(t, int64(1), k.release("c"))
	assert.Empty(t, k.published(), "nobody waits: no grant")
	assert.Empty(t, k.lock())
}

func TestFIFOSkipsAnExpiredHead(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.queued("b", 1)
	k.queued("c", 2)
	k.c.HSet(k.ctx, k.keys.Entries, "b", "0 60000") // b's entry ran out
	assert.Equal(t, int64(1), k.release("a"))
	k.granted("c", f)
	assert.Empty(t, k.queue())
	assert.Empty(t, k.c.HGetAll(k.ctx, k.keys.Entries).Val(), "the expired entry is dropped")
	assert.Equal(t, []any{int64(0), int64(-4)}, k.refresh("b"), "b is told gone")
}

func TestFIFOLeave(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.queued("b", 1)
	k.queued("c", 2)
	k.queued("d", 3)
	assert.Equal(t, int64(0), k.release("c"), "a waiter's leave: it held nothing")
	assert.Equal(t, []string{"b", "d"}, k.queue())
	assert.NotContains(t, k.c.HGetAll(k.ctx, k.keys.Entries).Val(), "c")
	assert.Equal(t, []any{int64(0), int64(-4)}, k.refresh("c"))

	assert.Equal(t, int64(1), k.release("a"))
	fb := k.granted("b", f)
	assert.Equal(t, int64(1), k.release("b"), "a leave after the grant releases the key")
	k.granted("d", fb)
	assert.Empty(t, k.queue())
}

func TestFIFORefresh(t *testing.T) {
	k := newFIFOKey(t)
	k.fence("a")
	k.queued("b", 1)
	before := k.c.HGet(k.ctx, k.keys.Entries, "b").Val()
	time.Sleep(5 * time.Millisecond)
	res := k.refresh("b")
	require.Len(t, res, 3)
	assert.Equal(t, int64(2), res[0], "waiting")
	assert.Positive(t, res[1], "the holder's PTTL")
	assert.Equal(t, []any{""}, res[2:], "the holder names no replica")
	after := k.c.HGet(k.ctx, k.keys.Entries, "b").Val()
	expiry := func(e string) int64 {
		n, err := strconv.ParseInt(strings.Fields(e)[0], 10, 64)
		require.NoError(t, err, e)
		return n
	}
	assert.Greater(t, expiry(after), expiry(before), "the entry's expiry is pushed back")
	assert.Equal(t, strconv.FormatInt(fifoTTL, 10), strings.Fields(after)[1], "the lease TTL is kept")
	assert.Equal(t, k.chans[0], strings.Fields(after)[2], "and the grant channel")
	assert.Equal(t, []any{int64(0), int64(-4)}, k.refresh("x"), "no entry: gone")

	k.c.HSet(k.ctx, k.keys.Entries, "b", "0 60000")
	assert.Equal(t, []any{int64(0), int64(-4)}, k.refresh("b"), "an expired entry: gone, and dropped")
	assert.Zero(t, k.c.Exists(k.ctx, k.keys.Queue, k.keys.Entries).Val())

	// a lock that expired is handed on by the refresh
	k.queued("c", 1)
	k.c.Del(k.ctx, k.keys.Lock)
	assert.Equal(t, int64(1), k.refresh("c")[0], "granted by its own refresh")
	assert.Len(t, k.published(), 1, "and the grant published")
}

func TestFIFONewcomerDoesNotJumpTheQueue(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.queued("b", 1)
	k.c.Del(k.ctx, k.keys.Lock) // a's lease expired
	res := k.acquire("n", 0)
	require.Len(t, res, 3)
	assert.Equal(t, int64(0), res[0], "a newcomer that does not queue: contended")
	fb := k.granted("b", f)
	k.queued("m", 1)
	assert.Equal(t, int64(1), k.release("b"))
	k.granted("m", fb)
}

// TestFIFOEntryTTLZero: an attempt that does not queue is answered
// contended, writes no queue, and its holder's release publishes nothing.
func TestFIFOEntryTTLZero(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	res, err := k.run(k.attempt("b", 0).call()).Slice()
	require.NoError(t, err)
	require.Len(t, res, 3)
	assert.Equal(t, int64(0), res[0])
	assert.Positive(t, res[1])
	assert.Zero(t, k.c.Exists(k.ctx, k.keys.Queue, k.keys.Entries).Val(), "nothing queued")
	assert.Equal(t, int64(1), k.release("a"))
	assert.Empty(t, k.published(), "no wake-up: nobody queued")
	assert.Greater(t, k.fence("c"), f)
	assert.Zero(t, k.c.Exists(k.ctx, k.keys.Queue, k.keys.Entries).Val())
}

func TestFIFOForceHandsOn(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.queued("b", 1)
	sum := sha1.Sum([]byte("a"))
	force := forceArgs{keys: k.keys, retention: int64(3600000), holder: hex.EncodeToString(sum[:])[:12]}
	res, err := k.run(force.call()).Slice()
	require.NoError(t, err)
	assert.Equal(t, []any{int64(1), hex.EncodeToString(sum[:]), f}, res)
	k.granted("b", f)
}

// TestFIFOGhostLeavesTheQueue: a waiter's leave got no reply, so its token
// is a ghost whose entry is still queued. The Locker's next attempt sends
// the ghost: it is barred and its entry dropped, so no hand-off grants it,
// whether the key is held (the attempt queues behind the live waiters) or
// free (the next live waiter gets the key).
func TestFIFOGhostLeavesTheQueue(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.queued("b", 1)
	k.queued("c", 2)
	k.queued("d", 3)
	withGhost := func(owner, ghost string) []any {
		args := k.attempt(owner, fifoEntry)
		args.ghosts = []string{ghost}
		res, err := k.run(args.call()).Slice()
		require.NoError(t, err)
		return res
	}

	res := withGhost("b2", "b")
	require.Len(t, res, 4, "queued: %v", res)
	assert.Equal(t, []any{int64(2), int64(3)}, []any{res[0], res[2]}, "held: b2 queues behind the live waiters")
	assert.Equal(t, []string{"c", "d", "b2"}, k.queue())
	assert.NotContains(t, k.c.HGetAll(k.ctx, k.keys.Entries).Val(), "b", "the ghost's entry is dropped")
	assert.Equal(t, []any{int64(0), int64(-4)}, k.refresh("b"), "the ghost is gone")

	k.c.Del(k.ctx, k.keys.Lock) // a's lease expired
	res = withGhost("c2", "c")
	require.Len(t, res, 4, "queued: %v", res)
	assert.Equal(t, []any{int64(2), int64(2)}, []any{res[0], res[2]}, "free: the key goes to d, and c2 queues")
	k.granted("d", f)
	assert.Equal(t, []string{"b2", "c2"}, k.queue())
	rec, err := leasekeys.ParseRecord(k.c.Get(k.ctx, k.keys.Fence).Val())
	require.NoError(t, err)
	for _, g := range []string{"b", "c"} {
		assert.Equal(t, byte(leasekeys.Unheld), rec.EndMark(g), "the ghost %s is barred '/'", g)
	}
	assert.Equal(t, []any{int64(0), int64(-3)}, k.acquire("c", fifoEntry), "a late copy of the ghost is barred")
}

// TestFIFOGrantsOnTheWaitersChannel: waiters of two Lockers queue on one
// key; each grant is published on the granted waiter's Locker's channel
// alone, and an entry without a channel (a Locker that does not listen)
// is granted without a message.
func TestFIFOGrantsOnTheWaitersChannel(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.lockers["c"] = 1
	k.queued("b", 1)
	k.queued("c", 2)
	args := k.attempt("d", fifoEntry)
	args.channel = ""
	res, err := k.run(args.call()).Slice()
	require.NoError(t, err)
	assert.Equal(t, []any{int64(2), int64(3)}, []any{res[0], res[2]}, "d queues, without a channel")
	assert.Equal(t, int64(1), k.release("a"))
	fb := k.granted("b", f)
	assert.Equal(t, int64(1), k.release("b"))
	fc := k.granted("c", fb)
	assert.Equal(t, int64(1), k.release("c"))
	assert.Empty(t, k.published(), "d's grant is published nowhere")
	assert.Equal(t, "d", k.lock(), "and d holds the key")
	res = k.refresh("d")
	assert.Equal(t, int64(1), res[0], "as its refresh learns")
	assert.Greater(t, res[1], fc, "with a fresh fence")
}

// TestFIFOACopyOfAQueuedAttemptKeepsItsEntry: a copy of a queued attempt
// (go-redis re-sends an acquire whose reply was lost) answers already
// queued, {2, pttl, 0}, and keeps the entry the first copy made, so the
// client waits on it, not on a next attempt behind it; a copy whose own
// hand-off grants that entry answers acquired, with the grant's fence.
func TestFIFOACopyOfAQueuedAttemptKeepsItsEntry(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.queued("b", 1)
	res := k.acquire("b", fifoEntry)
	require.Len(t, res, 4, "queued: %v", res)
	assert.Equal(t, []any{int64(2), int64(0)}, []any{res[0], res[2]}, "already queued")
	assert.Equal(t, []string{"b"}, k.queue(), "one entry")
	assert.Equal(t, int64(2), k.refresh("b")[0], "b waits on it")
	assert.Equal(t, int64(1), k.release("a"))
	fb := k.granted("b", f)

	k.queued("c", 1)
	k.c.Del(k.ctx, k.keys.Lock) // b's lease expired
	res = k.acquire("c", fifoEntry)
	require.Len(t, res, 2, "acquired: %v", res)
	assert.Equal(t, int64(1), res[0], "the copy's hand-off granted c's own entry")
	assert.Equal(t, res[1], k.granted("c", fb), "with the grant's fence")
	assert.Empty(t, k.queue())
}

// TestAResentQueuedAcquireWaitsOnItsEntry: the waiting Locker's first
// acquire runs twice (its first reply lost, go-redis sends it again): the
// waiter waits on the entry the first run made, and takes the key at the
// release, in that one attempt; no entry is left behind.
func TestAResentQueuedAcquireWaitsOnItsEntry(t *testing.T) {
	srv := redistest.Start(t)
	ctx := testCtx(t)
	holders := newLocker(t, srv.Client(t), Config{})
	holder, err := holders.Acquire(ctx, "k")
	require.NoError(t, err)
	c := srv.Client(t)
	var resent atomic.Bool
	c.AddHook(hookFunc(func(cmds []redis.Cmder, send func() error) error {
		for _, cmd := range cmds {
			if acquireScript.Runs(cmd) && resent.CompareAndSwap(false, true) {
				if err := send(); err != nil {
					return err
				}
			}
		}
		return send()
	}))
	attempts := countAcquires(c)
	waiting := newLocker(t, c, Config{Namespace: holders.set.Namespace, Wait: 20 * time.Second, TTL: 5 * time.Second})
	got := make(chan *Lease, 1)
	go func() {
		l, err := waiting.Acquire(ctx, "k")
		assert.NoError(t, err)
		got <- l
	}()
	waitForWaiters(t, waiting, 1)
	require.NoError(t, holder.Release(ctx))
	l := <-got
	require.NotNil(t, l)
	assert.True(t, resent.Load())
	assert.EqualValues(t, 2, attempts.Load(), "one attempt, sent twice: no second attempt behind a phantom entry")
	assert.Greater(t, l.Fence(), holder.Fence())
	queue := keysOf(holders.set.Namespace, "k")
	assert.Zero(t, srv.Client(t).Exists(ctx, queue.Queue, queue.Entries).Val(), "no entry left")
	require.NoError(t, l.Release(ctx))
}

// TestFIFORenewHandsNothingOn: a renewal that finds its lock expired
// answers 0 and leaves the queue alone (renew.lua reads no queue, as the
// model's renew_lua); the waiter's refresh hands the key on.
func TestFIFORenewHandsNothingOn(t *testing.T) {
	k := newFIFOKey(t)
	f := k.fence("a")
	k.queued("b", 1)
	k.c.Del(k.ctx, k.keys.Lock) // a's lease expired
	n, err := k.run(k.attempt("a", 0).renewal(f).call()).Int64()
	require.NoError(t, err)
	assert.Zero(t, n, "not renewed")
	assert.Empty(t, k.lock(), "the key stays free")
	assert.Equal(t, []string{"b"}, k.queue())
	assert.Empty(t, k.published())
	res := k.refresh("b")
	assert.Equal(t, int64(1), res[0], "b's refresh hands the key on, to b")
	assert.Equal(t, res[1], k.granted("b", f))
}

// TestADeadWaiterDelaysTheNextByItsTTL: an entry nobody listens for (a
// waiter that died) is granted the key at the release; the waiter behind
// it holds the key once that grant's lease TTL ran out and its next
// refresh (every BackoffMax here) handed the key on: within the dead
// waiter's lease TTL + BackoffMax + a round trip (slack for a loaded
// machine).
func TestADeadWaiterDelaysTheNextByItsTTL(t *testing.T) {
	const deadTTL, backoffMax = 500 * time.Millisecond, 100 * time.Millisecond
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := testCtx(t)
	holders := newLocker(t, c, Config{})
	holder, err := holders.Acquire(ctx, "k")
	require.NoError(t, err)
	keys := keysOf(holders.set.Namespace, "k")
	dead := acquireArgs{keys: keys, owner: "dead", ttl: deadTTL.Milliseconds(), retention: int64(3600000), queue: int64(10000)}
	res, err := script.RunOne(ctx, c, dead.call()).Slice()
	require.NoError(t, err)
	require.Equal(t, int64(2), res[0], "the dead waiter queued: %v", res)
	waiting := newLocker(t, c, Config{Namespace: holders.set.Namespace, Wait: 20 * time.Second, BackoffMax: backoffMax})
	got := make(chan *Lease, 1)
	go func() {
		l, err := waiting.Acquire(ctx, "k")
		assert.NoError(t, err)
		got <- l
	}()
	waitForWaiters(t, waiting, 1)
	released := time.Now()
	require.NoError(t, holder.Release(ctx))
	require.Equal(t, "dead", c.Get(ctx, keys.Lock).Val(), "the release granted the dead waiter")
	l := <-got
	require.NotNil(t, l)
	took := time.Since(released)
	assert.Less(t, took, deadTTL+backoffMax+2*time.Second, "the dead waiter's TTL + BackoffMax + slack")
	t.Logf("the waiter behind a dead one held the key %v after the release", took)
	require.NoError(t, l.Release(ctx))
}

// TestWaitersQueueAgainWhenTheQueueIsLost: a failover to a replica that
// missed the queue: the waiter's refresh is told gone, it queues again,
// and takes the key at the release.
func TestWaitersQueueAgainWhenTheQueueIsLost(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := testCtx(t)
	holders := newLocker(t, c, Config{})
	holder, err := holders.Acquire(ctx, "k")
	require.NoError(t, err)
	keys := keysOf(holders.set.Namespace, "k")
	waiting := newLocker(t, c, Config{Namespace: holders.set.Namespace, Wait: 20 * time.Second, BackoffMax: 50 * time.Millisecond})
	got := make(chan *Lease, 1)
	go func() {
		l, err := waiting.Acquire(ctx, "k")
		assert.NoError(t, err)
		got <- l
	}()
	waitForWaiters(t, waiting, 1)
	first := c.LRange(ctx, keys.Queue, 0, -1).Val()
	require.Len(t, first, 1)
	require.NoError(t, c.Del(ctx, keys.Queue, keys.Entries).Err())
	require.Eventually(t, func() bool {
		q := c.LRange(ctx, keys.Queue, 0, -1).Val()
		return len(q) == 1 && q[0] != first[0]
	}, 10*time.Second, 5*time.Millisecond, "the waiter queued again, as a new attempt")
	require.NoError(t, holder.Release(ctx))
	l := <-got
	require.NotNil(t, l)
	require.NoError(t, l.Release(ctx))
}
