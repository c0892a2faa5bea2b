package model

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
)

// The arguments the replay passes where the model has none: long enough
// that no key expires by itself during a run (the model's expiries are
// DELs), as lockwatch passes them in milliseconds.
const (
	ttlMs       = "600000"
	retentionMs = "3600000"
	entryMs     = 600000 // FIFO: a waiter's entry TTL; the model's entry expiries are writes of the replay
)

// replay runs the model's steps against the real scripts on one
// redis-server and compares every reply and record with the model's.
type replay struct {
	ctx    context.Context
	c      *redis.Client
	sub    *redis.PubSub // the Lockers' grant channels
	s      scripts
	keys   leasekeys.Keys // the lease's, as lockwatch names them
	res    string         // the resource's fenced key (write.lua)
	chans  []string       // Locker c's grant channel, as lockwatch names them
	owners map[int]string
	tokens map[string]int
	fences map[int]int64 // model fence → the one Redis minted
	count  map[string]int
	fifo   bool    // the FIFO scenario: acquires queue, and the queue is compared
	grants []step  // the grants the model printed for the step that follows
	queue  []entry // FIFO: the model's queue after the last step that printed it
}

func newReplay(ctx context.Context, c *redis.Client, s scripts, prefix string) (*replay, error) {
	r := &replay{
		ctx: ctx, c: c, s: s,
		keys: leasekeys.Of(prefix, "k"), res: prefix + ":res",
		owners: map[int]string{}, tokens: map[string]int{}, fences: map[int]int64{}, count: map[string]int{},
	}
	for c := range replayLockers {
		r.chans = append(r.chans, leasekeys.GrantChannel(prefix, fmt.Sprintf("locker%d", c)))
	}
	r.sub = c.Subscribe(ctx, r.chans...)
	for range r.chans {
		if _, err := r.sub.Receive(ctx); err != nil { // the subscriptions' confirmations
			_ = r.sub.Close()
			return nil, err
		}
	}
	return r, nil
}

// replayLockers is SIM's and FIFO's NC: the Lockers of a run, each with a
// grant channel of its own.
const replayLockers = 3

func (r *replay) close() error { return r.sub.Close() }

// owner is the owner token standing for the model's token t, as lockwatch
// makes them (crypto/rand Text): an odd t's ends in the replica name of a
// Locker with Config.Replica set, "@" and a name with the characters the
// name may have.
func (r *replay) owner(t int) string {
	if o, ok := r.owners[t]; ok {
		return o
	}
	o := rand.Text()
	if t%2 == 1 {
		o += fmt.Sprintf("@pod-%d.zone:a_b", t%3)
	}
	r.owners[t], r.tokens[o] = o, t
	return o
}

// namesHolder checks a contended answer's replica: the name after the last
// '@' of the lock's value, "" without one (or with the key free), never
// any of the token before it.
func (r *replay) namesHolder(script string, got any) error {
	held, err := r.c.Get(r.ctx, r.keys.Lock).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("%s: the lock: %w", script, err)
	}
	want := ""
	if i := strings.LastIndexByte(held, '@'); i >= 0 {
		want = held[i+1:]
	}
	if got != want {
		return fmt.Errorf("%s: want the holder's replica %q (lock %q), got %v", script, want, held, got)
	}
	return nil
}

// lockKeys are the KEYS of acquire.lua, release.lua, force.lua and
// refresh.lua, and all the keys a restart deletes; renew.lua and
// inspect.lua take the first two.
func (r *replay) lockKeys() []string {
	k := r.keys
	return []string{k.Lock, k.Fence, k.Queue, k.Entries}
}

// run replays one step.
func (r *replay) run(st step) error {
	r.count[st.kind]++
	if st.arg["cp"] == 1 {
		r.count["copies"]++
	}
	var err error
	switch st.kind {
	case "acquire":
		err = r.acquire(st)
	case "renew":
		err = r.renew(st)
	case "release":
		err = r.release(st)
	case "force":
		err = r.force(st)
	case "inspect":
		err = r.inspect(st)
	case "expire":
		err = r.c.Del(r.ctx, r.keys.Lock).Err()
	case "restart":
		err = r.c.Del(r.ctx, r.lockKeys()...).Err()
	case "evict":
		err = r.c.Del(r.ctx, r.keys.Fence).Err()
	case "failover":
		err = r.restore(*st.state)
	case "write":
		err = r.write(st)
	case "grant":
		r.grants = append(r.grants, st) // run by the script whose line follows
	case "refresh":
		err = r.refresh(st)
	case "qexpire":
		err = r.expireEntry(st.arg["t"])
	default:
		err = fmt.Errorf("unknown step")
	}
	if err == nil && st.state != nil {
		err = r.compare(*st.state)
	}
	if err != nil {
		return fmt.Errorf("%s\n\tmodel: %s", err, st.line)
	}
	return nil
}

func (r *replay) acquire(st step) error {
	entry := 0
	if st.arg["w"] == 1 { // the attempt queues
		entry = entryMs
	}
	if st.arg["c"] >= len(r.chans) {
		return fmt.Errorf("acquire: Locker %d, the replay has %d", st.arg["c"], len(r.chans))
	}
	argv := []any{r.owner(st.arg["t"]), ttlMs, retentionMs, entry, r.chans[st.arg["c"]]}
	r.countQueuedGhosts(st)
	for _, g := range st.ghosts {
		argv = append(argv, r.owner(g))
	}
	res, err := r.s.acquire.Run(r.ctx, r.c, r.lockKeys(), argv...).Slice()
	if err == nil {
		err = r.published()
	}
	switch want := st.arg["r"]; {
	case want == 4:
		if err == nil || !strings.Contains(err.Error(), "fence record missing") {
			return fmt.Errorf("acquire: want the error for a held lock without a record, got %v, %v", res, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("acquire: %w", err)
	case want == 5:
		if len(res) != 4 || res[0] != int64(2) || res[1].(int64) < 0 || res[2] != int64(st.arg["f"]) {
			return fmt.Errorf("acquire: want queued {2, pttl >= 0, %d, replica}, got %v", st.arg["f"], res)
		}
		return r.namesHolder("acquire", res[3])
	case want == 2:
		if len(res) != 3 || res[0] != int64(0) || res[1].(int64) < 0 {
			return fmt.Errorf("acquire: want contended {0, pttl >= 0, replica}, got %v", res)
		}
		return r.namesHolder("acquire", res[2])
	case len(res) != 2:
		return fmt.Errorf("acquire: reply %v", res)
	case want == 1:
		if res[0] != int64(1) {
			return fmt.Errorf("acquire: want {1, fence}, got %v", res)
		}
		return r.minted(st.arg["f"], res[1].(int64))
	case want == 3:
		if res[0] != int64(0) || res[1] != int64(-3) {
			return fmt.Errorf("acquire: want barred {0, -3}, got %v", res)
		}
	default:
		return fmt.Errorf("acquire: the model's reply %d is unknown", want)
	}
	return nil
}

func (r *replay) renew(st step) error {
	f, err := r.realFence(st.arg["f"])
	if err != nil {
		return err
	}
	n, err := r.s.renew.Run(r.ctx, r.c, r.lockKeys()[:2], r.owner(st.arg["t"]), ttlMs, retentionMs, strconv.FormatInt(f, 10)).Int64()
	if err != nil {
		return fmt.Errorf("renew: %w", err)
	}
	if want := map[int]int64{1: 1, 2: 0, 3: -1}[st.arg["r"]]; n != want {
		return fmt.Errorf("renew: want %d, got %d", want, n)
	}
	return nil
}

// refresh replays refresh.lua: the model's waiting (1), granted (2, with
// the fence) and gone (3).
func (r *replay) refresh(st step) error {
	res, err := r.s.refresh.Run(r.ctx, r.c, r.lockKeys(), r.owner(st.arg["t"]), entryMs, retentionMs).Slice()
	if err != nil {
		return fmt.Errorf("refresh: %w", err)
	}
	if err := r.published(); err != nil {
		return err
	}
	switch st.arg["r"] {
	case 1:
		if len(res) != 3 || res[0] != int64(2) || res[1].(int64) < 0 {
			return fmt.Errorf("refresh: want waiting {2, pttl >= 0, replica}, got %v", res)
		}
		return r.namesHolder("refresh", res[2])
	case 2:
		f, err := r.realFence(st.arg["f"])
		if err != nil {
			return err
		}
		if fmt.Sprint(res) != fmt.Sprint([]any{int64(1), f}) {
			return fmt.Errorf("refresh: want granted {1, %d}, got %v", f, res)
		}
	case 3:
		if fmt.Sprint(res) != fmt.Sprint([]any{int64(0), int64(-4)}) {
			return fmt.Errorf("refresh: want gone {0, -4}, got %v", res)
		}
	default:
		return fmt.Errorf("refresh: the model's reply %d is unknown", st.arg["r"])
	}
	return nil
}

// expireEntry is the model's clock running a queue entry out: its expiry
// goes to the past, its lease TTL kept.
func (r *replay) expireEntry(t int) error {
	e, err := r.c.HGet(r.ctx, r.keys.Entries, r.owner(t)).Result()
	if err != nil {
		return fmt.Errorf("the entry of %d that expires: %w", t, err)
	}
	_, ttl, _ := strings.Cut(e, " ")
	return r.c.HSet(r.ctx, r.keys.Entries, r.owner(t), "0 "+ttl).Err()
}

func (r *replay) release(st step) error {
	n, err := r.s.release.Run(r.ctx, r.c, r.lockKeys(), r.owner(st.arg["t"]), retentionMs).Int64()
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	if want := map[int]int64{1: 1, 2: 0}[st.arg["r"]]; n != want {
		return fmt.Errorf("release: want %d, got %d", want, n)
	}
	return r.published()
}

func (r *replay) force(st step) error {
	res, err := r.s.force.Run(r.ctx, r.c, r.lockKeys(), retentionMs, sha(r.owner(st.arg["h"]))[:12]).Slice()
	if err != nil {
		return fmt.Errorf("force: %w", err)
	}
	f, err := r.realFence(st.arg["f"])
	if err != nil {
		return err
	}
	want := []any{map[int]int64{1: 1, 2: 0}[st.arg["r"]], r.holder(st.arg["who"]), f}
	if fmt.Sprint(res) != fmt.Sprint(want) {
		return fmt.Errorf("force: want %v, got %v", want, res)
	}
	return r.published()
}

func (r *replay) inspect(st step) error {
	res, err := r.s.inspect.Run(r.ctx, r.c, r.lockKeys()[:2]).Slice()
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	f, err := r.realFence(st.arg["f"])
	if err != nil {
		return err
	}
	bars := int64(len(st.state.ended) + len(st.state.cont))
	if len(res) != 5 || fmt.Sprint(res[0]) != fmt.Sprint(r.holder(st.arg["who"])) || res[2] != f || res[3] != bars || res[1].(int64) <= 0 {
		return fmt.Errorf("inspect: want [%v pttl>0 %d %d replica], got %v", r.holder(st.arg["who"]), f, bars, res)
	}
	return r.namesHolder("inspect", res[4])
}

func (r *replay) write(st step) error {
	f, err := r.realFence(st.arg["f"])
	if err != nil {
		return err
	}
	m, err := r.realFence(st.arg["m"])
	if err != nil {
		return err
	}
	// The fourth argument is the clock bound, '' for none (a signed token's):
	// SIM, the scenario replayed, has no forger, so the bound is not part of what
	// it checks; fence's own tests check it.
	res, err := r.s.write.Run(r.ctx, r.c, []string{r.res}, strconv.FormatInt(f, 10), "v", "w"+strconv.Itoa(st.arg["id"]), "").Slice()
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	want := []any{int64(st.arg["r"]), strconv.FormatInt(m, 10)}
	if fmt.Sprint(res) != fmt.Sprint(want) {
		return fmt.Errorf("write: want %v, got %v", want, res)
	}
	return nil
}

// holder is force.lua's and inspect.lua's name for the model's token t:
// the SHA-1 of its owner token, nil for none.
func (r *replay) holder(t int) any {
	if t == 0 {
		return nil
	}
	return sha(r.owner(t))
}

func sha(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// minted maps the model's fence f to the one Redis minted, which must sit
// among the others as f sits among the model's: the model's fences are
// small numbers, Redis's are microseconds.
func (r *replay) minted(f int, real int64) error {
	if f == 0 {
		return fmt.Errorf("the model minted no fence, Redis minted %d", real)
	}
	if got, ok := r.fences[f]; ok {
		if got != real {
			return fmt.Errorf("fence: the model's %d is Redis's %d, now %d", f, got, real)
		}
		return nil
	}
	for mf, rf := range r.fences {
		if (mf < f) != (rf < real) || rf == real {
			return fmt.Errorf("fence: the model's %d and %d are in another order than Redis's %d and %d", mf, f, rf, real)
		}
	}
	r.fences[f] = real
	return nil
}

func (r *replay) realFence(f int) (int64, error) {
	if f == 0 {
		return 0, nil
	}
	real, ok := r.fences[f]
	if !ok {
		return 0, fmt.Errorf("the model's fence %d was never minted", f)
	}
	return real, nil
}

// published checks that the step published the grants the model printed
// for it ("<owner> <fence>", in order), each on the grant channel of the
// Locker whose attempt it grants, and nothing else: a PING on the
// subscription comes back after every message sent before it.
func (r *replay) published() error {
	if err := r.sub.Ping(r.ctx); err != nil {
		return fmt.Errorf("ping the subscription: %w", err)
	}
	var grants []*redis.Message
	for {
		msg, err := r.sub.ReceiveTimeout(r.ctx, 10*time.Second)
		if err != nil {
			return fmt.Errorf("the subscription: %w", err)
		}
		if _, ok := msg.(*redis.Pong); ok {
			break
		}
		if m, ok := msg.(*redis.Message); ok {
			grants = append(grants, m)
		}
	}
	return r.granted(grants)
}

// granted compares the grant messages Redis published with the model's
// grants, and maps the fences they carry.
func (r *replay) granted(msgs []*redis.Message) error {
	want := r.grants
	r.grants = nil
	if len(msgs) != len(want) {
		var got []string
		for _, m := range msgs {
			got = append(got, m.Channel+" "+m.Payload)
		}
		return fmt.Errorf("grants: the model granted %d, Redis published %q", len(want), got)
	}
	for i, g := range want {
		owner, digits, _ := strings.Cut(msgs[i].Payload, " ")
		f, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || owner != r.owner(g.arg["t"]) {
			return fmt.Errorf("grant: want %s to %d, Redis published %q", g.line, g.arg["t"], msgs[i].Payload)
		}
		if c := g.arg["c"]; c >= len(r.chans) || msgs[i].Channel != r.chans[c] {
			return fmt.Errorf("grant: want %s on Locker %d's channel, Redis published it on %q", g.line, c, msgs[i].Channel)
		}
		r.count[fmt.Sprintf("grant to Locker %d", g.arg["c"])]++
		if err := r.minted(g.arg["f"], f); err != nil {
			return fmt.Errorf("grant: %w", err)
		}
	}
	return nil
}

// compare reads the key as Redis holds it and compares it with the model's.
func (r *replay) compare(want record) error {
	pipe := r.c.Pipeline()
	lock := pipe.Get(r.ctx, r.keys.Lock)
	rec := pipe.Get(r.ctx, r.keys.Fence)
	if _, err := pipe.Exec(r.ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("read the key: %w", err)
	}
	var got record
	if o, err := lock.Result(); err == nil {
		t, ok := r.tokens[o]
		if !ok {
			return fmt.Errorf("the lock holds %q, no token of the model's", o)
		}
		got.lock = t
	}
	text := rec.Val()
	parsed, err := leasekeys.ParseRecord(text)
	if err != nil {
		return fmt.Errorf("the record %q: %w", text, err)
	}
	digits := ""
	if parsed.Minted {
		digits = strconv.FormatInt(parsed.Fence, 10)
	}
	var unknown []string // barred owner tokens that are no tokens of the model's
	token := func(owner string) int {
		t, ok := r.tokens[owner]
		if !ok {
			unknown = append(unknown, owner)
		}
		return t
	}
	for _, o := range parsed.Contended {
		got.cont = append(got.cont, token(o))
	}
	for _, b := range parsed.Ended {
		got.ended = append(got.ended, bar{mark: b.Mark, tok: token(b.Owner)})
	}
	if unknown != nil {
		return fmt.Errorf("the record %q bars %q, no tokens of the model's", text, unknown)
	}
	wantFence, err := r.realFence(want.fence)
	if err != nil {
		return err
	}
	wantDigits := ""
	if want.fence != 0 {
		wantDigits = strconv.FormatInt(wantFence, 10)
	}
	if digits != wantDigits || got.lock != want.lock ||
		fmt.Sprint(got.ended) != fmt.Sprint(want.ended) || fmt.Sprint(got.cont) != fmt.Sprint(want.cont) {
		return fmt.Errorf("the key differs:\n\tRedis: lock=%d record=%q (ended %v, contended %v)\n\twant:  lock=%d fence=%s ended %v, contended %v",
			got.lock, text, got.ended, got.cont, want.lock, wantDigits, want.ended, want.cont)
	}
	if r.fifo {
		r.queue = want.queue
		return r.compareQueue(want.queue)
	}
	return nil
}

// countQueuedGhosts counts an acquire that sends a ghost whose entry is
// still queued (a leave without a reply), which the script must drop.
func (r *replay) countQueuedGhosts(st step) {
	for _, e := range r.queue {
		if slices.Contains(st.ghosts, e.tok) {
			r.count["queued ghost"]++
			return
		}
	}
}

// compareQueue reads the wait queue and its entries and compares them with
// the model's: the tokens in order, each entry live or expired, and no
// entry outside the queue.
func (r *replay) compareQueue(want []entry) error {
	pipe := r.c.Pipeline()
	list := pipe.LRange(r.ctx, r.keys.Queue, 0, -1)
	entries := pipe.HGetAll(r.ctx, r.keys.Entries)
	now := pipe.Time(r.ctx)
	if _, err := pipe.Exec(r.ctx); err != nil {
		return fmt.Errorf("read the queue: %w", err)
	}
	var got []entry
	for _, o := range list.Val() {
		e, ok := entries.Val()[o]
		expiry, _, _ := strings.Cut(e, " ")
		ms, err := strconv.ParseInt(expiry, 10, 64)
		if !ok || err != nil {
			return fmt.Errorf("the queue holds %q without an entry (%q)", o, e)
		}
		got = append(got, entry{tok: r.tokens[o], live: ms > now.Val().UnixMilli()})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(entries.Val()) != len(got) {
		return fmt.Errorf("the queue differs:\n\tRedis: %v, entries %v\n\twant:  %v", got, entries.Val(), want)
	}
	return nil
}

// restore writes the model's record into Redis: the replica a failover
// promoted holds what the model's replica held.
func (r *replay) restore(want record) error {
	pipe := r.c.TxPipeline()
	pipe.Del(r.ctx, r.lockKeys()...)
	if want.lock != 0 {
		pipe.Set(r.ctx, r.keys.Lock, r.owner(want.lock), 10*time.Minute)
	}
	f, err := r.realFence(want.fence)
	if err != nil {
		return err
	}
	rec := leasekeys.Record{Fence: f, Minted: want.fence != 0}
	for _, b := range want.ended {
		rec.Ended = append(rec.Ended, leasekeys.Bar{Mark: b.mark, Owner: r.owner(b.tok)})
	}
	for _, t := range want.cont {
		rec.Contended = append(rec.Contended, r.owner(t))
	}
	if text := rec.String(); text != "" {
		pipe.Set(r.ctx, r.keys.Fence, text, time.Hour)
	}
	_, err = pipe.Exec(r.ctx)
	return err
}

func (b bar) String() string { return fmt.Sprintf("%c%d", b.mark, b.tok) }
