package lease

import (
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// settings are the resolved, validated timings one lease runs with. They are
// computed once per Locker (and once per acquire that passes options).
type settings struct {
	config
	ttlMs        int64
	drift        time.Duration // Redlock's clock-drift allowance: TTL/100 + 2ms
	renewEvery   time.Duration // TTL/3
	renewSlack   time.Duration // how early a renewal may go to share a batch
	retentionMs  int64
	ttlArg       any // ttlMs and retentionMs as script arguments, boxed once
	retentionArg any
	ackTimeoutMs int64
	rec          *obs.Recorder // tel's
}

// settings derives the timings c leaves to the TTL, then validates them.
func (c config) settings() (*settings, error) {
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
// under: the TTL (rounded down to milliseconds), the namespace, the name.
func (c config) validateBase() error {
	switch ttl := c.ttl.Truncate(time.Millisecond); {
	case ttl < minTTL:
		return invalidf("TTL %v is below the minimum %v", c.ttl, minTTL)
	case ttl > forever:
		return invalidf("TTL %v is above the maximum %v", c.ttl, forever)
	}
	if err := validNamespace(c.namespace); err != nil {
		return err
	}
	if c.name == "" {
		return invalidf("empty lock name")
	}
	return nil
}

// derive fills in the timings c leaves to the TTL, clamps durations to
// forever, and boxes the script arguments once.
func (c config) derive() *settings {
	s := &settings{config: c, rec: (*obs.Telemetry)(c.tel).Recorder()}
	s.ttl = c.ttl.Truncate(time.Millisecond)
	s.ttlMs = s.ttl.Milliseconds()
	s.drift = s.ttl/100 + 2*time.Millisecond
	s.renewEvery = s.ttl / 3
	s.renewSlack = s.renewEvery / 4
	if !c.safetySet {
		s.safety = s.ttl / 10
	}
	if !c.hardSet {
		s.commitHard, s.commitWarn = s.ttl/20, s.ttl/4
	}
	for _, d := range []*time.Duration{&s.renewalTimeout, &s.acquireTimeout, &s.releaseTimeout} {
		if *d == 0 {
			*d = s.ttl / 5
		}
	}
	for _, d := range []*time.Duration{&s.wait, &s.maxHold, &s.acquireTimeout, &s.releaseTimeout, &s.ackTimeout, &s.fenceRetention, &s.commitTimeout} {
		*d = min(*d, forever)
	}
	s.fenceRetention = s.fenceRetention.Truncate(time.Millisecond)
	s.retentionMs = s.fenceRetention.Milliseconds()
	s.ackTimeoutMs = s.ackTimeout.Milliseconds()
	s.ttlArg, s.retentionArg = s.ttlMs, s.retentionMs
	return s
}

// validate returns the first rule the derived timings break. No rule sums
// two option values: one may be near the largest Duration, and the sum
// would wrap.
func (s *settings) validate() error {
	switch {
	case s.safety < 0:
		return invalidf("negative safety margin %v", s.safety)
	case s.safety >= s.ttl:
		return invalidf("safety margin %v not below the TTL %v", s.safety, s.ttl)
	}
	for _, t := range [...]struct {
		name string
		d    time.Duration
	}{{"renewal", s.renewalTimeout}, {"acquire", s.acquireTimeout}, {"release", s.releaseTimeout}, {"commit", s.commitTimeout}} {
		if t.d <= 0 {
			return invalidf("%s timeout %v must be positive", t.name, t.d)
		}
	}
	if s.renewalTimeout > s.ttl-s.drift-s.safety-s.renewEvery {
		return invalidf("TTL %v too short for renewal every %v, renewal timeout %v, drift %v and safety margin %v: a renewal sent on time could not be confirmed before the cancel point",
			s.ttl, s.renewEvery, s.renewalTimeout, s.drift, s.safety)
	}
	return s.validateBounds()
}

// validateBounds checks the margins, bounds and counts of s, after its
// timeouts (validate).
func (s *settings) validateBounds() error {
	switch {
	case s.commitHard < 0 || s.commitWarn < s.commitHard || s.commitWarn > s.ttl:
		return invalidf("commit margins hard %v, warn %v: need 0 <= hard <= warn <= TTL %v", s.commitHard, s.commitWarn, s.ttl)
	case s.maxHold < 0:
		return invalidf("negative max hold %v", s.maxHold)
	case s.wait < 0:
		return invalidf("negative wait %v", s.wait)
	case s.backoffMin <= 0 || s.backoffMax < s.backoffMin:
		return invalidf("backoff bounds %v..%v: need 0 < min <= max", s.backoffMin, s.backoffMax)
	case s.fenceRetention < s.ttl:
		return invalidf("fence retention %v shorter than the TTL %v", s.fenceRetention, s.ttl)
	case s.ackReplicas < 0:
		return invalidf("negative replica count %d", s.ackReplicas)
	case s.ackReplicas > 0 && s.ackTimeoutMs <= 0:
		return invalidf("replication ack needs a timeout of at least 1ms, got %v", s.ackTimeout)
	}
	return nil
}

// cancelAfter is how long after a confirmed send the lease is cancelled if
// no later renewal is confirmed: the key cannot expire in Redis before
// send + TTL, the drift allowance covers clock-rate differences, and the
// safety margin leaves the work time to stop.
func (s *settings) cancelAfter() time.Duration { return s.ttl - s.drift - s.safety }
