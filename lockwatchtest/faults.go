package lockwatchtest

import (
	"sync"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/leasekeys"
)

// Contend makes another owner hold key, with a lease renewed until release
// is called or the test ends. The code under test's Acquire of key returns
// a *lease.NotAcquiredError (errors.Is lease.ErrNotAcquired) with the
// holder's remaining TTL (after its Config.Wait, if it waits); the
// middleware answers it with 409 and Retry-After. Contend waits for a
// release under way (the middleware releases after its answer, in the
// background) and fails the test when the key stays held for a second.
func (s *Server) Contend(key string) (release func()) {
	s.t.Helper()
	ctx, cancel := s.context()
	defer cancel()
	l, err := s.other.Acquire(ctx, key)
	if err != nil {
		s.t.Fatalf("lockwatchtest: contend %q: %v", key, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			ctx, cancel := s.context()
			defer cancel()
			_ = l.Release(ctx)
		})
	}
	s.t.Cleanup(release)
	return release
}

// DropNextReply loses the reply to the next command the Locker's client
// sends about key: the command reaches Redis and takes effect, and the
// client reads nothing until its deadline, as when a network drops the
// reply. When that command is an Acquire of key, the Acquire returns an
// error matching lease.ErrUnknown (and context.DeadlineExceeded) after the
// Locker's AcquireTimeout, though Redis gave it the key; the Locker then
// frees the key in the background. When it is a held lease's renewal, the
// lease is lost with lease.LossRenewalUnknown.
func (s *Server) DropNextReply(key string) {
	s.replies.arm(leasekeys.Of(s.cfg.Namespace, key).Lock)
}

// Lose deletes the lease on key from Redis, as its expiry during a pause of
// the holder would: the holder's next renewal (they run every TTL/3) finds
// the key gone and cancels the lease's Context with a *lease.LostError
// cause (errors.Is lease.ErrLost, Reason lease.LossRenewalRejected); Commit
// then refuses with the same error. Lose fails the test when no lease holds
// key.
func (s *Server) Lose(key string) {
	s.t.Helper()
	if !s.mr.Del(leasekeys.Of(s.cfg.Namespace, key).Lock) {
		s.t.Fatalf("lockwatchtest: lose %q: no lease holds it", key)
	}
}

// NewerToken returns a token for key newer than every fence minted for key
// so far, signed with the Config's Secrets if any: the token the key's next
// holder would carry. Writing with it to a fenced store (a
// fence.RedisStore, a fence.Table) moves the store's mark past the holder's
// token, as the next holder's write would after the holder paused past its
// TTL: the holder's next write to that store is rejected
// (*fence.StaleError, errors.Is fence.ErrStale), while its lease itself is
// untouched, the pause not noticed yet.
//
// Its fence is the newest minted plus one, or Redis's clock in
// microseconds if later, as an acquire mints one, and newer than the
// tokens NewerToken returned for key before: each call is a next holder
// after the last. It is not recorded in Redis, so the holder's renewals
// go on; a lease taken after it, minted from Redis's clock, carries a
// newer fence, whose writes the store accepts.
func (s *Server) NewerToken(key string) fence.Token {
	s.t.Helper()
	ctx, cancel := s.context()
	defer cancel()
	info, err := s.other.Inspect(ctx, key)
	if err == nil {
		var now time.Time
		now, err = s.direct.Time(ctx).Result()
		info.Fence = max(info.Fence, now.UnixMicro()-1)
	}
	if err != nil {
		s.t.Fatalf("lockwatchtest: newer token for %q: %v", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.issued == nil {
		s.issued = map[string]int64{}
	}
	n := max(info.Fence, s.issued[key]) + 1
	s.issued[key] = n
	return fence.Mint(s.cfg.Namespace, key, n, s.cfg.Secrets)
}
