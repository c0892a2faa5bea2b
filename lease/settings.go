package lease

import (
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// settings are the resolved, validated timings one lease runs with. They are
// computed once per Locker (NewLocker, With).
type settings struct {
	Config
	ttlMs        int64
	drift        time.Duration // Redlock's clock-drift allowance: TTL/100 + 2ms
	renewEvery   time.Duration // TTL/3
	renewSlack   time.Duration // how early a renewal may go to share a batch
	retentionMs  int64
	ttlArg       any // ttlMs and retentionMs as script arguments, boxed once
	retentionArg any
	ackTimeoutMs int64
	ownerSuffix  string        // "@" and Replica, "" without one (newOwner)
	rec          *obs.Recorder // tel's
}

// settings derives the timings c leaves to the TTL, then validates them.
func (c Config) settings() (*settings, error) {
	if err := c.validateBase(); err != nil {
		return nil, err
	}
	s := c.derive()
	if err := s.validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// validateBase checks what every other setting derives from or is reported
// under: the TTL (rounded down to milliseconds) and the namespace.
func (c Config) validateBase() error {
	switch ttl := c.TTL.Truncate(time.Millisecond); {
	case ttl < minTTL:
		return invalidf("TTL %v is below the minimum %v", c.TTL, minTTL)
	case ttl > forever:
		return invalidf("TTL %v is above the maximum %v", c.TTL, forever)
	}
	if err := validNamespace(c.Namespace); err != nil {
		return err
	}
	return validReplica(c.Replica)
}

// derive fills in the timings c leaves to the TTL, clamps durations to
// forever, and boxes the script arguments once.
func (c Config) derive() *settings {
	s := &settings{Config: c, rec: obs.RecorderOf(c.Telemetry)}
	s.TTL = c.TTL.Truncate(time.Millisecond)
	s.ttlMs = s.TTL.Milliseconds()
	s.drift = s.TTL/100 + 2*time.Millisecond
	s.renewEvery = s.TTL / 3
	s.renewSlack = s.renewEvery / 4
	s.SafetyMargin = orDefault(c.SafetyMargin, s.TTL/10)
	s.CommitHard = orDefault(c.CommitHard, s.TTL/20)
	s.CommitWarn = orDefault(c.CommitWarn, max(s.TTL/4, s.CommitHard))
	for _, d := range []*time.Duration{&s.RenewalTimeout, &s.AcquireTimeout, &s.ReleaseTimeout} {
		if *d == 0 {
			*d = s.TTL / 5
		}
	}
	for _, d := range []*time.Duration{&s.Wait, &s.MaxHold, &s.AcquireTimeout, &s.ReleaseTimeout, &s.ReplicationTimeout, &s.FenceRetention, &s.CommitTimeout} {
		*d = min(*d, forever)
	}
	s.FenceRetention = s.FenceRetention.Truncate(time.Millisecond)
	s.retentionMs = s.FenceRetention.Milliseconds()
	s.ackTimeoutMs = s.ReplicationTimeout.Milliseconds()
	s.ttlArg, s.retentionArg = s.ttlMs, s.retentionMs
	if c.Replica != "" {
		s.ownerSuffix = "@" + c.Replica
	}
	return s
}

// validate returns the first rule the derived timings break. No rule sums
// two option values: one may be near the largest Duration, and the sum
// would wrap.
func (s *settings) validate() error {
	if s.SafetyMargin >= s.TTL {
		return invalidf("safety margin %v not below the TTL %v", s.SafetyMargin, s.TTL)
	}
	for _, t := range [...]struct {
		name string
		d    time.Duration
	}{{"renewal", s.RenewalTimeout}, {"acquire", s.AcquireTimeout}, {"release", s.ReleaseTimeout}, {"commit", s.CommitTimeout}} {
		if t.d <= 0 {
			return invalidf("%s timeout %v must be positive", t.name, t.d)
		}
	}
	if s.RenewalTimeout > s.TTL-s.drift-s.SafetyMargin-s.renewEvery {
		return invalidf("TTL %v too short for renewal every %v, renewal timeout %v, drift %v and safety margin %v: a renewal sent on time could not be confirmed before the cancel point",
			s.TTL, s.renewEvery, s.RenewalTimeout, s.drift, s.SafetyMargin)
	}
	return s.validateBounds()
}

// validateBounds checks the margins, bounds and counts of s, after its
// timeouts (validate).
func (s *settings) validateBounds() error {
	switch {
	case s.CommitWarn != 0 && s.CommitWarn < s.CommitHard || s.CommitWarn > s.TTL:
		return invalidf("commit margins hard %v, warn %v: need hard <= warn <= TTL %v, or no warn", s.CommitHard, s.CommitWarn, s.TTL)
	case s.MaxHold < 0:
		return invalidf("negative max hold %v", s.MaxHold)
	case s.Wait < 0:
		return invalidf("negative wait %v", s.Wait)
	case s.BackoffMin <= 0 || s.BackoffMax < s.BackoffMin:
		return invalidf("backoff bounds %v..%v: need 0 < min <= max", s.BackoffMin, s.BackoffMax)
	case s.FenceRetention < s.TTL:
		return invalidf("fence retention %v shorter than the TTL %v", s.FenceRetention, s.TTL)
	case s.ReplicationAcks < 0:
		return invalidf("negative replica count %d", s.ReplicationAcks)
	case s.ReplicationAcks > 0 && s.ackTimeoutMs <= 0:
		return invalidf("replication ack needs a timeout of at least 1ms, got %v", s.ReplicationTimeout)
	}
	return nil
}

// orDefault returns d if it is positive, def if it is zero, and zero
// (none) if it is negative.
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d > 0:
		return d
	case d == 0:
		return def
	}
	return 0
}

// cancelAfter is how long after a confirmed send the lease is cancelled if
// no later renewal is confirmed: the key cannot expire in Redis before
// send + TTL, the drift allowance covers clock-rate differences, and the
// safety margin leaves the work time to stop.
func (s *settings) cancelAfter() time.Duration { return s.TTL - s.drift - s.SafetyMargin }
