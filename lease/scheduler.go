package lease

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/internal/clock"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// schedulerPoll bounds how long the loop sleeps while leases are held. Its
// timer runs on Go's monotonic clock, which stops while the host is
// suspended; lease instants are on the boot clock, which does not. On
// resume every cancel point that the suspend passed is due, but a timer set
// for the next renewal (up to TTL/3 away) would still wait for it: the loop
// looks again within schedulerPoll instead, and Err, Remaining and Commit
// end a lease themselves as soon as they see its cancel point passed
// (expire).
const schedulerPoll = 50 * time.Millisecond

// maxBatch bounds the commands of one pipeline, of renewals or of the group
// commit's acquires and releases: large enough that 100k leases need a few
// hundred round trips per TTL/3, small enough that one slow batch does not
// hold a connection for long.
const maxBatch = 1000

// scheduler renews every lease of one Locker and enforces their cancel
// points, from one goroutine and one timer, however many leases are held.
//
// Two min-heaps: the renewal queue (leases waiting for their next renewal, by
// renewal instant) and the deadline queue (every active lease, by cancel
// point). When the earliest renewal is due, every lease due within its slack
// (TTL/12) joins the same batch, so renewals of many leases share pipelines.
// Batches run on their own goroutines: a stalled Redis delays replies, never
// the deadline queue, so a lease is cancelled at its cancel point even while
// its renewal hangs. A lease's context is cancelled the moment it turns LOST,
// under the scheduler's mutex; its report runs afterwards and never on the
// loop's goroutine, so a slow logger or span processor can delay reports,
// never another lease's cancellation.
type scheduler struct {
	lk      *Locker
	mu      sync.Mutex
	renewQ  queue
	dlQ     queue
	closed  bool
	armed   time.Duration // when the loop's timer fires next (it may fire early, never late)
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	batches sync.WaitGroup
}

func newScheduler(lk *Locker) *scheduler {
	s := &scheduler{
		lk:     lk,
		armed:  math.MaxInt64, // not armed until the loop's first step
		renewQ: newRenewQueue(),
		dlQ:    newDeadlineQueue(),
		wake:   make(chan struct{}, 1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	go s.run()
	return s
}

func (s *scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// add starts renewing l. It reports false, and does nothing, when the
// scheduler is closed.
func (s *scheduler) add(l *Lease) bool {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return false
	}
	s.dlQ.push(l)
	s.queueRenewalLocked(l)
	// The loop's timer only needs moving when l is due before it fires,
	// counting the schedulerPoll that bounds its sleep while anything is
	// held (a suspend can pass l's cancel point before its renewal is
	// due). Usually it is not: while leases are held the loop already
	// looks within schedulerPoll, so an acquire costs it no wake-up; the
	// first acquire on an idle Locker wakes it once.
	at := min(l.renewAt, time.Duration(l.cancelAt.Load()), clock.Now()+schedulerPoll)
	wake := at < s.armed
	if wake {
		s.armed = at
	}
	s.mu.Unlock()
	if wake {
		s.signal()
	}
	return true
}

// holds reports whether an active lease of this scheduler holds the lock
// named lockKey. It reads every held lease, as Snapshot does: only a
// contended Acquire's end asks, not its polls.
func (s *scheduler) holds(lockKey string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.dlQ.items {
		if l.lockKey == lockKey && state(l.state.Load()) == stateActive {
			return true
		}
	}
	return false
}

// queueRenewalLocked queues l's next renewal unless it is final.
func (s *scheduler) queueRenewalLocked(l *Lease) {
	if !l.final() {
		s.renewQ.push(l)
	}
}

// final reports whether l's cancel point is its max-hold instant, which
// a renewal cannot move, so renewing is pointless.
func (l *Lease) final() bool {
	return l.maxHoldAt > 0 && time.Duration(l.cancelAt.Load()) >= l.maxHoldAt
}

// remove stops renewing l for Release; an active lease becomes RELEASED.
// One already past its cancel point, which the loop has not reached yet, is
// lost first (newly is then true and the caller reports the loss): what Err
// said about it, Release must not contradict.
func (s *scheduler) remove(l *Lease) (lostAt time.Duration, wasLost, newly bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := clock.Now(); state(l.state.Load()) == stateActive && time.Duration(l.cancelAt.Load()) <= t {
		newly = s.loseLocked(l, &LostError{Reason: l.deadlineReason(t)}, t)
	}
	if state(l.state.Load()) == stateLost {
		return l.lostAt, true, newly
	}
	l.state.Store(int32(stateReleased))
	s.renewQ.remove(l)
	s.dlQ.remove(l)
	return 0, false, false
}

// expire loses l if its cancel point has passed and it is still active,
// as the loop would on its next step: Err and Remaining call it when they
// see the passed cancel point, so that what they report, the context
// shows at once and no renewal applied later can contradict.
func (s *scheduler) expire(l *Lease) {
	s.mu.Lock()
	t := clock.Now()
	newly := time.Duration(l.cancelAt.Load()) <= t && s.loseLocked(l, &LostError{Reason: l.deadlineReason(t)}, t)
	s.mu.Unlock()
	if newly {
		s.lk.background(func() { reportLoss(l) })
	}
}

// loseLocked turns an active lease LOST and cancels its context at once.
// The caller reports it (reportLoss) once the mutex is released.
func (s *scheduler) loseLocked(l *Lease, cause *LostError, at time.Duration) bool {
	if state(l.state.Load()) != stateActive {
		return false
	}
	if cause.Reason != LossRenewalRejected && cause.Reason != LossForceReleased {
		cause.KeyHeldUntil = clock.WallTime(time.Duration(l.cancelAt.Load()) + l.set.SafetyMargin)
	}
	l.loss.Store(cause)
	l.lostAt = at
	l.state.Store(int32(stateLost))
	s.lk.losses.add(l, cause.Reason) // here, so that the log is in the order of the losses
	s.renewQ.remove(l)
	s.dlQ.remove(l)
	l.cancel(cause) // runs no caller code: AfterFunc callbacks get their own goroutines
	return true
}

func (s *scheduler) run() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		lost, batch, next := s.step()
		for _, chunk := range chunks(batch) {
			s.batches.Add(1)
			go func() {
				defer s.batches.Done()
				s.lk.renew(chunk)
			}()
		}
		if len(lost) > 0 {
			// Reported on a goroutine of their own: loggers and exporters
			// may be slow, and this loop enforces every other cancel point.
			s.batches.Add(1)
			go func() {
				defer s.batches.Done()
				for _, l := range lost {
					reportLoss(l)
				}
			}()
		}
		timer.Reset(next - clock.Now())
		select {
		case <-timer.C:
		case <-s.wake:
		case <-s.quit:
			return
		}
	}
}

// step ends the leases whose cancel point has come, takes the renewals that
// are due, and returns when to look again.
func (s *scheduler) step() (lost, batch []*Lease, next time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := clock.Now()
	for l := s.dlQ.next(); l != nil && time.Duration(l.cancelAt.Load()) <= t; l = s.dlQ.next() {
		s.loseLocked(l, &LostError{Reason: l.deadlineReason(t)}, t)
		lost = append(lost, l)
	}
	if l := s.renewQ.next(); l != nil && l.renewAt <= t {
		for ; l != nil && l.renewAt <= t+l.set.renewSlack; l = s.renewQ.next() {
			s.renewQ.remove(l)
			batch = append(batch, l)
		}
	}
	// With nothing held the loop has nothing to look at: add wakes it.
	next = t + time.Hour
	if l := s.renewQ.next(); l != nil {
		next = min(next, l.renewAt)
	}
	if l := s.dlQ.next(); l != nil {
		next = min(next, time.Duration(l.cancelAt.Load()), t+schedulerPoll)
	}
	s.armed = next
	return lost, batch, next
}

// chunks splits due renewals into pipelines of leases with the same renewal
// timeout (one pipeline has one deadline: a lease must not inherit a shorter
// one from a neighbour), at most maxBatch each.
func chunks(batch []*Lease) [][]*Lease {
	slices.SortStableFunc(batch, func(a, b *Lease) int { return cmp.Compare(a.set.RenewalTimeout, b.set.RenewalTimeout) })
	var out [][]*Lease
	for len(batch) > 0 {
		n := 1
		for n < len(batch) && n < maxBatch && batch[n].set.RenewalTimeout == batch[0].set.RenewalTimeout {
			n++
		}
		out = append(out, batch[:n:n])
		batch = batch[n:]
	}
	return out
}

// renewed applies one batch's replies: a confirmed renewal moves the cancel
// point to sentAt + TTL − drift − safety and queues the next renewal; a
// rejected (forced[i]: by an administrator; forced may be nil) or failed
// one loses the lease. Replies for leases that were lost or released
// meanwhile change nothing, and their result is cleared so that nobody
// reports them. A lease whose cancel point passed before its reply was
// applied is lost however the reply reads: Err may have reported the loss
// already, and LOST is final.
func (s *scheduler) renewed(batch []*Lease, sentAt time.Duration, results []obs.RenewalResult, errs []error, forced []bool) (lost []*Lease) {
	s.mu.Lock()
	t := clock.Now()
	for i, l := range batch {
		if state(l.state.Load()) != stateActive {
			results[i] = ""
			continue
		}
		if time.Duration(l.cancelAt.Load()) <= t {
			s.loseLocked(l, &LostError{Reason: l.deadlineReason(t)}, t)
			lost = append(lost, l)
			continue
		}
		switch results[i] {
		case obs.RenewalRenewed:
			at := sentAt + l.set.cancelAfter()
			if l.maxHoldAt > 0 {
				at = min(at, l.maxHoldAt)
			}
			if at > time.Duration(l.cancelAt.Load()) {
				l.cancelAt.Store(int64(at))
				s.dlQ.fix(l)
			}
			l.renewAt = sentAt + l.set.renewEvery
			l.renewals++
			l.lastRenewal = t - sentAt
			s.queueRenewalLocked(l)
		case obs.RenewalRejected:
			reason := LossRenewalRejected
			if forced != nil && forced[i] {
				reason = LossForceReleased
			}
			s.loseLocked(l, &LostError{Reason: reason}, t)
			lost = append(lost, l)
		default:
			s.loseLocked(l, &LostError{Reason: LossRenewalUnknown, Err: errs[i]}, t)
			lost = append(lost, l)
		}
	}
	s.mu.Unlock()
	s.signal()
	return lost
}

// close stops the loop and loses every lease still held (their keys are left
// to expire: the work may still be running). It waits for batches in flight.
func (s *scheduler) close() {
	s.mu.Lock()
	s.closed = true
	var lost []*Lease
	t := clock.Now()
	for l := s.dlQ.next(); l != nil; l = s.dlQ.next() {
		s.loseLocked(l, &LostError{Reason: LossClosed}, t)
		lost = append(lost, l)
	}
	s.mu.Unlock()
	close(s.quit)
	<-s.done
	for _, l := range lost {
		reportLoss(l)
	}
	s.batches.Wait()
}
