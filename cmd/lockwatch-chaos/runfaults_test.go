package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/lease"
	"github.com/stretchr/testify/assert"
)

// fakeKey answers Inspect as Redis would for a key held with fence 7 for
// its first held readings, then free.
func fakeKey(held int) func(context.Context, string) (lease.KeyInfo, error) {
	var n atomic.Int32
	return func(context.Context, string) (lease.KeyInfo, error) {
		if int(n.Add(1)) <= held {
			return lease.KeyInfo{Held: true, Fence: 7, TTL: 300 * time.Millisecond}, nil
		}
		return lease.KeyInfo{Fence: 7}, nil
	}
}

func TestWatchExpiry(t *testing.T) {
	b := beat{Holder: "r1", Fence: 7, Key: "k"}
	in := &injector{ttl: 200 * time.Millisecond, inspect: fakeKey(2), expired: map[workID]int64{}, stop: make(chan struct{})}
	from := now()
	in.watchExpiry(b, 200*time.Millisecond)
	at, ok := in.expiries()[workID{"r1", 7}]
	assert.True(t, ok, "a key seen held, then gone, has expired")
	assert.Greater(t, at, from+int64(300*time.Millisecond), "at the latest moment a reading allows")

	in = &injector{ttl: 200 * time.Millisecond, inspect: fakeKey(100), expired: map[workID]int64{}, stop: make(chan struct{})}
	in.watchExpiry(b, 100*time.Millisecond)
	assert.Empty(t, in.expiries(), "a key still held may be renewed yet: no expiry")
}

func TestStillHeld(t *testing.T) {
	b := beat{Holder: "r1", Fence: 7, Key: "k"}
	f := fault{N: 3, Kind: faultRunProgramStop, Dur: 2 * time.Second}
	in := &injector{ttl: time.Second, inspect: fakeKey(1), stop: make(chan struct{})}
	in.stillHeld(&runHolder{id: "r1"}, b, f)
	assert.Equal(t, []string{"run-program-stop: fault #3: r1's program (fence 7) was stopped for 2s and its lockwatch run still held k for it (300ms left)"},
		in.violations())
	in.stillHeld(&runHolder{id: "r1"}, b, f)
	assert.Len(t, in.violations(), 1, "a key no longer held is no violation")
}
