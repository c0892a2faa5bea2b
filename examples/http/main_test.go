package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// heldLease matches the active-leases series of the route at 1.
var heldLease = regexp.MustCompile(`(?m)^lockwatch_lease_active\{lock_name="POST /invoices/\{id\}/pay"[^}]*\} 1$`)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestRun serves the example against real redis-servers, the leases on
// one without persistence and the payments on one with an append-only
// file: a payment goes through under its lease, a second one for the same
// invoice at the same time is refused with 409 and Retry-After, and
// /metrics shows both.
func TestRun(t *testing.T) {
	srv := redistest.Start(t, "--save", "", "--appendonly", "no")
	store := redistest.Start(t, "--appendonly", "yes")
	addr := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{redis: srv.Addr(), fence: store.Addr(), listen: "127.0.0.1:0", work: time.Second, ready: func(a string) { addr <- a }})
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.Transport.(*http.Transport).CloseIdleConnections()

	first := make(chan *http.Response, 1)
	go func() {
		resp, err := client.Post(base+"/invoices/42/pay", "", nil)
		assert.NoError(t, err)
		first <- resp
	}()
	// Once the first payment holds the lease, a second one is refused.
	require.Eventually(t, func() bool {
		return heldLease.MatchString(get(t, client, base+"/metrics"))
	}, 5*time.Second, 10*time.Millisecond)
	// The debug page lists the payment's lease while it is held.
	var page struct {
		Leases []struct {
			Name  string `json:"name"`
			Fence int64  `json:"fence"`
		} `json:"leases"`
	}
	require.NoError(t, json.Unmarshal([]byte(get(t, client, base+"/debug/lockwatch?format=json")), &page))
	require.Len(t, page.Leases, 1)
	assert.Equal(t, "POST /invoices/{id}/pay", page.Leases[0].Name)
	assert.Contains(t, get(t, client, base+"/debug/lockwatch"), "POST /invoices/{id}/pay")

	resp, err := client.Post(base+"/invoices/42/pay", "", nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	assert.Contains(t, string(body), "LEASE_CONTENDED")

	resp = <-first
	require.NotNil(t, resp)
	var paid struct {
		Paid  bool  `json:"paid"`
		Fence int64 `json:"fence"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&paid))
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, paid.Paid)
	assert.Positive(t, paid.Fence)
	assert.Equal(t, page.Leases[0].Fence, paid.Fence, "the page showed the payment's fence")

	metrics := get(t, client, base+"/metrics")
	assert.Regexp(t, `(?m)^lockwatch_lease_acquires_total\{lock_name="POST /invoices/\{id\}/pay",[^}]*result="contended"\} 1$`, metrics)
	assert.Regexp(t, `(?m)^lockwatch_lease_acquires_total\{lock_name="POST /invoices/\{id\}/pay",[^}]*result="acquired"\} 1$`, metrics)
	assert.Regexp(t, `(?m)^lockwatch_fence_checks_total\{[^}]*resource="payments",result="accepted"\} 1$`, metrics)

	cancel()
	require.NoError(t, <-done)
}

// TestRunRefusesAForgetfulStore: with the payments on a Redis that keeps
// neither an append-only file nor snapshots (by default the leases' Redis)
// the example does not start: a restart of that Redis would forget the
// marks and accept the late write of an older lease.
func TestRunRefusesAForgetfulStore(t *testing.T) {
	srv := redistest.Start(t, "--save", "", "--appendonly", "no")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{redis: srv.Addr(), listen: "127.0.0.1:0", work: time.Millisecond, ready: func(a string) { served <- a }})
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, fence.ErrNotDurable)
	case a := <-served:
		cancel()
		t.Fatalf("served on %s with a fence store that forgets its marks on a restart (then: %v)", a, <-done)
	}
}

func get(t *testing.T, client *http.Client, url string) string {
	t.Helper()
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}
