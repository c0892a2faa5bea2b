package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// The election the candidates campaign in: one key of the holders'
// namespace, beside the lock keys, with registers of its own that only its
// leaders write. Its name labels the lockwatch_election_* series.
const (
	electionKey  = "e1"
	electionName = "chaos-election"
)

// termRec is what one candidate saw of one term it led, on the one
// system-wide clock.
type termRec struct {
	Holder string `json:"h"` // the candidate, its Config.Identity
	Proc   int    `json:"p"` // 0: this process; n: child process n
	Key    string `json:"key"`
	Fence  int64  `json:"f"`
	Start  int64  `json:"s"`           // when the leader's function started
	Cancel int64  `json:"c,omitempty"` // when its context was cancelled by the term's loss; 0 if it was not
	Done   int64  `json:"d"`           // when its context's Done closed (at the loss, or at the resignation)
	// The last write batch's start and end (the claim, or a guarded write):
	// a loss that strikes while one runs lets it finish, as Commit does,
	// and the fence judges it.
	Write  int64  `json:"w,omitempty"`
	Wrote  int64  `json:"wd,omitempty"`
	End    int64  `json:"e"` // when the function returned
	Writes int    `json:"n"` // write batches
	Lost   bool   `json:"lost,omitempty"`
	Reason string `json:"why,omitempty"`
	Late   bool   `json:"late,omitempty"`   // Run reported a late completion
	Paused bool   `json:"paused,omitempty"` // stopped on purpose before a write, for a TTL or more
}

// work is the term as a lease record for the overlap check: live from the
// function's start to the first of its context's end and its return.
func (t termRec) work() leaseRec {
	return leaseRec{Holder: t.Holder, Proc: t.Proc, Key: t.Key, Fence: t.Fence, Acquired: t.Start, Done: t.Done,
		End: t.End, Released: t.End, Lost: t.Lost, Reason: t.Reason, Late: t.Late, Term: true}
}

func (t termRec) liveUntil() int64 { return t.work().liveUntil() }

// candidate is one replica campaigning with election.Run. A term's leader
// claims the term first, as examples/singleton does: it writes the
// election key's fenced registers (Redis, PostgreSQL) once with the
// term's token, which bars every older term there. Then, for 0.5 to 2
// TTLs, it writes the guarded register every 1/8 to 1/2 TTL with the same
// token (a Guard admits the several requests of one lease, and refuses an
// older lease's), checking its term's context before each write; then it
// returns, so that the term is resigned and the next candidate in the
// queue is elected, and campaigns again. A write under way when the term
// is lost runs to its end (the fence judges it); none starts after.
type candidate struct {
	id    string
	proc  int
	ttl   time.Duration
	el    *election.Election
	regs  *registers
	rng   *rand.Rand
	rec   recorder
	stop  <-chan struct{}
	pause func(key string, fence int64) bool // as holder.pause, before an armed write
	seq   int
	cur   *leading // the term under way, from its function's start to OnStoppedLeading
	err   error    // why Run gave up, if it did
}

// leading is a term under way: its record and when its context ended.
type leading struct {
	rec             termRec
	done, cancelled atomic.Int64
	signalled       chan struct{}
}

func newCandidate(id string, proc int, lc *lockClient, ttl time.Duration, tel *telemetry.Telemetry,
	regs *registers, seed uint64, rec recorder, stop <-chan struct{}) (*candidate, error) {
	c := &candidate{id: id, proc: proc, ttl: ttl, regs: regs, rec: rec, stop: stop,
		rng: rand.New(rand.NewPCG(seed, 0x63616e64))} // "cand"
	el, err := election.New(lc.locker, electionKey, election.Config{
		Identity: id, Name: electionName,
		OnStoppedLeading: c.stopped,
	})
	c.el = el
	return c, err
}

// run campaigns until stop, one Run after another: Run returns when a term
// was resigned (the function returned while leading).
func (c *candidate) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	for {
		err := c.el.Run(ctx, c.lead)
		if ctx.Err() != nil {
			return
		}
		if err != nil && !errors.Is(err, election.ErrLateCompletion) {
			c.err = fmt.Errorf("candidate %s: %w", c.id, err)
			return
		}
		rest(ctx, time.Duration(10+c.rng.IntN(40))*time.Millisecond)
	}
}

// rest waits d or until ctx ends.
func rest(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// lead is the leader's function: reads of the fenced registers, the
// term's claim, then guarded writes until its tenure ends or its context
// does. A write's context is not the term's: a write that began runs to
// its end, and the fence judges it, as in a holder's Commit.
func (c *candidate) lead(ctx context.Context, t election.Term) error {
	st := &leading{rec: termRec{Holder: c.id, Proc: c.proc, Key: electionKey, Fence: t.Fence, Start: now()},
		signalled: make(chan struct{})}
	c.cur = st
	context.AfterFunc(ctx, func() {
		at := now()
		st.done.Store(at)
		if errors.Is(context.Cause(ctx), lease.ErrLost) {
			st.cancelled.Store(at)
		}
		close(st.signalled)
	})
	bg := context.WithoutCancel(ctx)
	for _, reg := range []string{regRedis, regPG} {
		r := op{Holder: c.id, Proc: c.proc, Kind: kindRead, Key: electionKey, Reg: reg, Invoke: now()}
		c.regs.read(bg, &r)
		r.Return = now()
		c.rec.op(r)
	}
	c.batch(st, func() {
		c.seq++
		for _, reg := range []string{regRedis, regPG} {
			c.write(bg, t, reg)
		}
	})
	tenure := time.Duration((0.5 + 1.5*c.rng.Float64()) * float64(c.ttl))
	for until := st.rec.Start + int64(tenure); ctx.Err() == nil && now() < until; {
		// An armed leader-stop stops the process here: its check of
		// the term done, its write not yet sent.
		if c.pause != nil && c.pause(electionKey, t.Fence) {
			st.rec.Paused = true
		}
		c.batch(st, func() {
			c.seq++
			c.write(bg, t, regGuard)
		})
		rest(ctx, time.Duration((0.125+0.375*c.rng.Float64())*float64(c.ttl)))
	}
	st.rec.End = now()
	return nil
}

// batch runs one batch of writes and notes when it ran.
func (c *candidate) batch(st *leading, writes func()) {
	st.rec.Write = now()
	writes()
	st.rec.Wrote = now()
	st.rec.Writes++
}

// write writes the candidate's next value to the election key's register
// reg with the term's token; the guarded register slowly, as a holder's
// Commit does.
func (c *candidate) write(ctx context.Context, t election.Term, reg string) {
	w := op{Holder: c.id, Proc: c.proc, Kind: kindWrite, Key: electionKey, Reg: reg, Fence: t.Fence, Token: t.Token,
		Value: fmt.Sprintf("%s/%d", c.id, c.seq)}
	if reg == regGuard {
		w.Via = guardEntryPoints[c.rng.IntN(len(guardEntryPoints))]
		if w.Via != viaUnary {
			w.Slow = time.Duration((0.05 + 0.15*c.rng.Float64()) * float64(c.ttl))
		}
	}
	w.Invoke = now()
	c.regs.write(ctx, &w, nil)
	w.Return = now()
	c.rec.op(w)
}

// stopped is OnStoppedLeading: the term was resigned or lost, and its
// function had returned; its record is complete.
func (c *candidate) stopped(t election.Term, reason error) {
	st := c.cur
	c.cur = nil
	if st == nil || st.rec.Fence != t.Fence {
		return
	}
	// The term's lease was released, which cancels its context: the
	// AfterFunc has run or will.
	select {
	case <-st.signalled:
	case <-time.After(10 * c.ttl):
	}
	r := st.rec
	r.Done, r.Cancel = st.done.Load(), st.cancelled.Load()
	if r.Done == 0 {
		r.Done = r.End
	}
	r.Lost = errors.Is(reason, lease.ErrLost)
	r.Late = errors.Is(reason, election.ErrLateCompletion)
	if lost, ok := errors.AsType[*lease.LostError](reason); ok {
		r.Reason = string(lost.Reason)
	}
	c.rec.term(r)
}

// runCandidateChild is a candidate process: one candidate until stop, then
// its report. Its terms' leases and its election record to a telemetry of
// their own (the election's metric check); its writes' rejections to
// reader's, as a holder's do.
func runCandidateChild(cfg childConfig, reader *sdkmetric.ManualReader, regs *registers,
	pause func(string, int64) bool, stop <-chan struct{}, out *childOut) error {
	ereader := sdkmetric.NewManualReader()
	emp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(ereader))
	defer func() { _ = emp.Shutdown(context.Background()) }()
	etel := telemetry.New(telemetry.Config{MeterProvider: emp, Logger: slog.New(slog.DiscardHandler)})
	lc := newLockClient(cfg.Lock, cfg.TTL, etel)
	c, err := newCandidate(cfg.Candidate, cfg.Index, lc, cfg.TTL, etel, regs, cfg.Seed, out, stop)
	if err != nil {
		return errors.Join(err, lc.close())
	}
	c.pause = pause
	c.run()
	if err := errors.Join(c.err, lc.close()); err != nil {
		return err
	}
	counts, err := collect(context.Background(), reader)
	if err != nil {
		return err
	}
	ec, err := collectElection(context.Background(), ereader)
	if err != nil {
		return err
	}
	out.mu.Lock()
	terms := out.terms
	out.mu.Unlock()
	out.send(childMsg{Report: &childReport{Metrics: counts, Seen: out.seen(), Election: ec, Terms: terms}})
	return out.err
}

// localCandidates are the candidates of this process, each with a Locker
// of its own (a replica each), and the telemetry their elections and
// terms' leases record to, apart from the holders'.
type localCandidates struct {
	list    []*candidate
	clients []*lockClient
	reader  *sdkmetric.ManualReader
	mp      *sdkmetric.MeterProvider
	once    sync.Once
	err     error
}

// startCandidates starts cfg.candidates candidates, c1 and on, as
// goroutines of wg.
func startCandidates(cfg config, target lockTarget, regs *registers, rec recorder, stop <-chan struct{},
	wg *sync.WaitGroup) (*localCandidates, error) {
	cs := &localCandidates{reader: sdkmetric.NewManualReader()}
	cs.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(cs.reader))
	tel := telemetry.New(telemetry.Config{MeterProvider: cs.mp, Logger: slog.New(slog.DiscardHandler)})
	for i := 1; i <= cfg.candidates; i++ {
		lc := newLockClient(target, cfg.ttl, tel)
		cs.clients = append(cs.clients, lc)
		c, err := newCandidate(fmt.Sprintf("c%d", i), 0, lc, cfg.ttl, tel, regs, cfg.seed+uint64(400+i), rec, stop)
		if err != nil {
			return cs, err
		}
		cs.list = append(cs.list, c)
	}
	for _, c := range cs.list {
		wg.Go(c.run)
	}
	return cs, nil
}

// close closes the candidates' Lockers, once they stopped, so that what
// their metrics counted is final. Safe to call more than once.
func (cs *localCandidates) close() error {
	cs.once.Do(func() {
		for _, lc := range cs.clients {
			cs.err = errors.Join(cs.err, lc.close())
		}
	})
	return cs.err
}

// finish closes the Lockers and returns what the elections counted, and
// why a candidate gave up, if one did.
func (cs *localCandidates) finish() (electionCounts, error) {
	err := cs.close()
	for _, c := range cs.list {
		err = errors.Join(err, c.err)
	}
	ec, cerr := collectElection(context.Background(), cs.reader)
	return ec, errors.Join(err, cerr, cs.mp.Shutdown(context.Background()))
}

// elections reports whether the run has an election.
func (c config) elections() bool { return c.candidates+c.candProcs+c.elects > 0 }

// electLane reports whether k is a fault of the election's lane: it runs
// beside the main lane, as the run holders' does, so that the main lane's
// schedule of a seed stays what it was, and stops only candidate
// processes, which the main lane never picks.
func (k faultKind) electLane() bool { return k == faultLeaderStop }

// leaderArmTTLs is what the schedule plans for leader-stop's wait for a
// candidate process to lead and write.
const leaderArmTTLs = 2.0

// leaderStop stops the leading candidate process past its term, midway
// through its work: every candidate process is armed, and the first whose
// leader is about to write (its check of the term's context done, its
// guarded write not yet sent) is stopped. Meanwhile its term's key
// expires, the next candidate is elected, claims its term and writes with
// a larger token; on resume the deposed leader's write goes out, late, and
// the Guard must refuse it wherever the new leader wrote first. A goroutine candidate may lead all
// along: after 4 times the planned wait the fault gives up, and says so.
func (in *injector) leaderStop(f fault) (string, error) {
	if len(in.cands) == 0 {
		return "no candidate processes", nil
	}
	for _, c := range in.cands {
		if err := c.send(cmdArm); err != nil {
			return "", err
		}
	}
	wait := time.Duration(4 * leaderArmTTLs * float64(in.ttl))
	type hit struct {
		c *child
		m stopMe
	}
	hits, quit := make(chan hit), make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range in.cands {
		wg.Go(func() {
			select {
			case m := <-c.stopMe:
				select {
				case hits <- hit{c, m}:
				case <-quit:
					_ = c.send(cmdGo) // another one was first: carry on
				}
			case <-quit:
			}
		})
	}
	t := time.NewTimer(wait)
	var got *hit
	select {
	case h := <-hits:
		got = &h
	case <-t.C:
	case <-in.stop:
	}
	t.Stop()
	close(quit)
	wg.Wait()
	for _, c := range in.cands {
		if got == nil || c != got.c {
			_ = c.send(cmdDisarm)
		}
	}
	if got == nil {
		select {
		case <-in.stop:
			return "the run stopped before a candidate process wrote", nil
		default:
		}
		return fmt.Sprintf("no candidate process led and wrote within %v", wait), nil
	}
	if err := got.c.pause(); err != nil {
		return "", err
	}
	sleep(f.Dur, in.stop)
	err := got.c.resume()
	if serr := got.c.send(cmdGo); err == nil {
		err = serr
	}
	return fmt.Sprintf("%s stopped before its write on %s in term %d", got.c.name, got.m.Key, got.m.Fence), err
}
