package lease

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/internal/obs"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/internal/testenv/telemetrytest"
	"github.com/lockwatch/lockwatch/telemetry"
	"github.com/lockwatch/lockwatch/telemetry/otelsetup"
)

// Security checks: what an attacker who controls lock keys (request input)
// can and cannot do, and what never leaks into metrics.

// derivedLen is the length of every Redis key of a lease in namespace ns,
// whatever the caller's key: ns + ":{" + 32 hex digits + "}:" + "l" or "f".
func derivedLen(ns string) int { return len(ns) + len(":{}:l") + 32 }

// slotTags returns n strings that hash to slot: the hash tags an attacker
// would put in braces to send keys to a slot of their choice.
func slotTags(slot uint16, n int) []string {
	var tags []string
	for i := 0; len(tags) < n; i++ {
		if tag := "t" + strconv.Itoa(i); keySlot(tag) == slot {
			tags = append(tags, tag)
		}
	}
	return tags
}

// clusterKeys returns every key on every master of the cluster, by master
// address, and the total the masters report (DBSIZE).
func clusterKeys(ctx context.Context, t *testing.T, cluster *redistest.Cluster) (byMaster map[string][]string, total int64) {
	t.Helper()
	byMaster = map[string][]string{}
	for _, n := range cluster.Nodes() {
		c := n.Client(t)
		size, err := c.DBSize(ctx).Result()
		require.NoError(t, err)
		total += size
		iter := c.Scan(ctx, 0, "*", 1000).Iterator()
		for iter.Next(ctx) {
			byMaster[n.Addr()] = append(byMaster[n.Addr()], iter.Val())
		}
		require.NoError(t, iter.Err())
	}
	return byMaster, total
}

// TestSecurityUntrustedKeysOnCluster: caller keys crafted to pick a Redis
// Cluster slot (hash tags), to inject commands (CRLF, RESP), to exhaust
// memory (1 MB) or to confuse (unicode, NUL bytes, braces) land where their
// hash says, as keys of the bounded form and nothing else; and no key can
// reach another namespace's lease.
func TestSecurityUntrustedKeysOnCluster(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	c := cluster.Client(t)
	ctx := testCtx(t)

	t.Run("crafted keys land by hash", func(t *testing.T) {
		// The attacker's target: the first slot of the first master.
		const target = 0
		tags := slotTags(target, 24)
		hostile := []string{
			"{" + tags[0] + "}",
			"}{" + tags[1] + "}",
			"{" + tags[2] + "}\r\nSET injected 1\r\n",
			"*3\r\n$3\r\nSET\r\n$8\r\ninjected\r\n$1\r\n1\r\n{" + tags[3] + "}",
			"{" + tags[4] + "}" + strings.Repeat("x", 1<<20),
			"{" + tags[5] + "}ключ-🔒-\u202e",
			"{" + tags[6] + "}\xff\xfe invalid UTF-8",
			"{" + tags[7] + "}\x00",
			"\x00{" + tags[8] + "}",
			"{" + tags[9] + "}a\x00b",
		}
		for _, tag := range tags[10:] {
			hostile = append(hostile, "{"+tag+"}order-"+tag)
		}
		for _, k := range hostile {
			require.EqualValues(t, target, c.ClusterKeySlot(ctx, k).Val(),
				"Redis would put the raw key %.40q in the target slot", k)
		}

		lk := newLocker(t, c, Config{})
		ns := lk.set.Namespace
		want := map[string]bool{}
		leases := map[string]*Lease{}
		for _, k := range hostile {
			l, err := lk.Acquire(ctx, k)
			require.NoError(t, err, "key %.40q", k)
			t.Cleanup(func() { _ = l.Release(context.Background()) })
			lock, fence := redisKeys(ns, k)
			want[lock], want[fence] = true, true
			leases[lock] = l
		}
		require.Len(t, want, 2*len(hostile), "every key has its own two Redis keys")

		byMaster, total := clusterKeys(ctx, t, cluster)
		assert.EqualValues(t, len(want), total, "nothing but the leases' keys exists: no injected key")
		shape := regexp.MustCompile(`^` + regexp.QuoteMeta(ns) + `:\{([0-9a-f]{32})\}:[lf]$`)
		inTarget := 0
		for addr, keys := range byMaster {
			assert.NotEmpty(t, keys, "master %s holds none of the keys: they did not spread by hash", addr)
			for _, key := range keys {
				require.True(t, want[key], "unexpected key %.60q on %s", key, addr)
				m := shape.FindStringSubmatch(key)
				require.NotNil(t, m, "key %.60q is not of the bounded form", key)
				assert.Len(t, key, derivedLen(ns))
				assert.LessOrEqual(t, len(key), derivedLen(strings.Repeat("n", maxNamespace)))
				slot, err := c.ClusterKeySlot(ctx, key).Result()
				require.NoError(t, err)
				assert.EqualValues(t, keySlot(m[1]), slot, "the slot is the hash's")
				owner, err := c.MasterForKey(ctx, key)
				require.NoError(t, err)
				assert.Equal(t, addr, owner.Options().Addr, "the key lives on the master of its slot")
				if slot == target && strings.HasSuffix(key, ":l") {
					inTarget++
				}
			}
		}
		// By chance, each lease has a 1 in 16384 chance to land there.
		assert.LessOrEqual(t, inTarget, 1, "%d of %d crafted keys reached the target slot", inTarget, len(hostile))

		// The values are ours too: the owner token and the fence, never
		// caller bytes.
		for lock, l := range leases {
			v, err := c.Get(ctx, lock).Result()
			require.NoError(t, err)
			assert.Equal(t, ownerOf(l), v)
			v, err = c.Get(ctx, lock[:len(lock)-1]+"f").Result()
			require.NoError(t, err)
			assert.Equal(t, strconv.FormatInt(l.Fence(), 10), v)
		}

		// A contended 1 MB key gives an error of bounded size.
		_, err := lk.Acquire(ctx, hostile[4])
		require.ErrorIs(t, err, ErrNotAcquired)
		assert.Less(t, len(err.Error()), 200)
	})

	t.Run("namespaces never collide", func(t *testing.T) {
		base := testNamespace(t)
		// Each pair would be one string if namespace and key were simply
		// joined, or if the key could spell out another namespace's key.
		otherLock, _ := redisKeys(base+":g", "h")
		pairs := [][2][2]string{
			{{base, "k"}, {base + "x", "k"}},
			{{base, "b:c"}, {base + ":b", "c"}},
			{{base, ":d:e"}, {base + ":", "d:e"}},
			{{base, "e\x00f"}, {base + "e", "f"}},
			{{base, otherLock}, {base + ":g", "h"}},
			{{base, strings.TrimPrefix(otherLock, base+":")}, {base + ":g", strings.TrimPrefix(otherLock, base+":")}},
		}
		want := map[string]bool{}
		for _, pair := range pairs {
			var held []*Lease
			for _, nk := range pair {
				lk := newLocker(t, c, Config{Namespace: nk[0]})
				l, err := lk.Acquire(ctx, nk[1])
				require.NoError(t, err, "namespace %q key %q: another namespace's lease stood in the way", nk[0], nk[1])
				t.Cleanup(func() { _ = l.Release(context.Background()) })
				held = append(held, l)
				lock, fence := redisKeys(nk[0], nk[1])
				want[lock], want[fence] = true, true
			}
			for _, l := range held {
				require.NoError(t, l.Err())
			}
		}
		byMaster, _ := clusterKeys(ctx, t, cluster)
		var present []string
		for _, keys := range byMaster {
			for _, k := range keys {
				if strings.HasPrefix(k, base) {
					present = append(present, k)
				}
			}
		}
		assert.Len(t, present, len(want), "distinct leases, distinct Redis keys")
		for _, k := range present {
			assert.True(t, want[k], "unexpected key %q", k)
		}
	})
}

// labelPair matches one label of the text exposition formats, with the
// escapes they allow inside values.
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)

// scrape fetches the exporter's metrics with the given Accept header and
// returns the body, every label value (series and exemplar labels alike) and
// the names of the exemplar labels.
func scrape(t *testing.T, exporter *httptest.Server, accept string) (body string, values []string, exemplarLabels map[string]bool) {
	t.Helper()
	body, err := fetch(exporter, accept)
	require.NoError(t, err)
	exemplarLabels = map[string]bool{}
	for line := range strings.Lines(body) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		sample, exemplar, _ := strings.Cut(line, " # ")
		for _, m := range labelPair.FindAllStringSubmatch(sample, -1) {
			values = append(values, m[2])
		}
		for _, m := range labelPair.FindAllStringSubmatch(exemplar, -1) {
			values = append(values, m[2])
			exemplarLabels[m[1]] = true
		}
	}
	return body, values, exemplarLabels
}

func fetch(exporter *httptest.Server, accept string) (string, error) {
	req, err := http.NewRequest(http.MethodGet, exporter.URL, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", accept)
	resp, err := exporter.Client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("scrape: %s: %s", resp.Status, b)
	}
	return string(b), err
}

// secrets is what must never become a metric label: caller keys, their
// hashes and Redis keys, owner tokens and fences.
type secrets struct {
	substrings []string        // must not occur anywhere in a scrape
	fences     map[string]bool // must not be a label value
}

func (s *secrets) add(l *Lease) {
	if s.fences == nil {
		s.fences = map[string]bool{}
	}
	s.substrings = append(s.substrings, l.key, hashTag(l.lockKey), l.lockKey, fenceKeyOf(l), ownerOf(l))
	s.fences[strconv.FormatInt(l.Fence(), 10)] = true
	s.fences[l.Token().String()] = true
}

// leaks returns every place where a secret shows in a scrape.
func (s *secrets) leaks(body string, values []string) []string {
	var found []string
	for _, v := range s.substrings {
		if strings.Contains(body, v) {
			found = append(found, "in the scrape: "+v)
		}
	}
	for _, v := range values {
		if s.fences[v] {
			found = append(found, "fence as a label value: "+v)
		}
		for _, sub := range s.substrings {
			if strings.Contains(v, sub) {
				found = append(found, "in label value "+strconv.Quote(v))
			}
		}
	}
	return found
}

// TestSecurityMetricLabelsCarryNoSecrets scrapes a real Prometheus exporter
// (otelsetup, both exposition formats, exemplars included) after leases on
// many distinct keys were acquired, contended, committed, lost and
// released, and searches every label value for the keys, their hashes,
// owner tokens and fences. The control, a lock name misused as a key, shows
// the search finds a key that does become a label.
func TestSecurityMetricLabelsCarryNoSecrets(t *testing.T) {
	ctx := testCtx(t)
	p, err := otelsetup.New(ctx, otelsetup.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	tel := telemetry.New(telemetry.Config{
		MeterProvider: p.MeterProvider, TracerProvider: p.TracerProvider, Logger: slog.New(slog.DiscardHandler),
	})
	exporter := httptest.NewServer(p.Handler())
	t.Cleanup(exporter.Close)
	srv := redistest.Start(t)
	c := srv.Client(t)
	lk := newLocker(t, c, Config{Telemetry: tel, Name: "report", TTL: 300 * time.Millisecond})

	// Sampled, so that the histograms carry exemplars.
	ctx, span := p.TracerProvider.Tracer("test").Start(ctx, "request")
	var s secrets
	const keys = 200
	for i := range keys {
		key := "customer-" + strconv.Itoa(i) + "-" + keySuffix(i)
		l, err := lk.Acquire(ctx, key)
		require.NoError(t, err)
		s.add(l)
		_, err = lk.Acquire(ctx, key)
		require.ErrorIs(t, err, ErrNotAcquired)
		require.NoError(t, l.Commit(ctx, func(context.Context, fence.Token) error { return nil }))
		if i%20 == 0 {
			// Deleted behind its back: lost at its next renewal.
			require.NoError(t, c.Del(ctx, l.lockKey).Err())
			_ = waitDone(t, l, 5*time.Second)
		}
		_ = l.Release(ctx)
	}
	span.End()
	lost := regexp.MustCompile(`reason="renewal_rejected"\} 10\n`)
	require.Eventually(t, func() bool {
		body, err := fetch(exporter, "text/plain")
		return err == nil && lost.MatchString(body)
	}, 10*time.Second, 10*time.Millisecond, "the losses are not all recorded")

	formats := map[string]string{
		"prometheus":  "text/plain; version=0.0.4",
		"openmetrics": "application/openmetrics-text; version=1.0.0",
	}
	for name, accept := range formats {
		t.Run(name, func(t *testing.T) {
			body, values, exemplarLabels := scrape(t, exporter, accept)
			require.Contains(t, values, "report", "the label values were read")
			require.Greater(t, len(values), 100)
			leaks := s.leaks(body, values)
			assert.Empty(t, leaks[:min(len(leaks), 5)], "%d leaks", len(leaks))
			if name == "openmetrics" {
				require.NotEmpty(t, exemplarLabels, "no exemplars were scraped")
				for l := range exemplarLabels {
					assert.Contains(t, []string{"trace_id", "span_id"}, l, "exemplars carry trace ids only")
				}
			}
		})
	}

	t.Run("control: a key misused as the lock name is found", func(t *testing.T) {
		misused := newLocker(t, c, Config{Telemetry: tel, Name: "customer-leak-" + keySuffix(0)})
		l, err := misused.Acquire(ctx, "customer-leak-"+keySuffix(0))
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		var leaked secrets
		leaked.add(l)
		body, values, _ := scrape(t, exporter, formats["prometheus"])
		assert.NotEmpty(t, leaked.leaks(body, values))
	})
}

// keySuffix gives keys a part that is not a small number, so that a key is
// never a substring of an unrelated label value.
func keySuffix(i int) string { return strconv.FormatInt(int64(i)*7919+104729, 36) }

// TestSecurityMaxHoldStopsAHolderThatRenewsForever: a holder that never
// releases, and whose renewals all succeed, is stopped at its max hold: its
// context is cancelled with reason max_hold, renewal stops, the key expires
// in Redis without a release, and another client then gets the lease with a
// larger fence. The stopped holder's late Release cannot free the new
// holder's key.
func TestSecurityMaxHoldStopsAHolderThatRenewsForever(t *testing.T) {
	ctx := testCtx(t)
	h := telemetrytest.New(t)
	srv := redistest.Start(t)
	const ttl, maxHold = 300 * time.Millisecond, time.Second
	greedy := newLocker(t, srv.Client(t), Config{TTL: ttl, MaxHold: maxHold, Telemetry: h.Tel, Name: "greedy"})
	other := newLocker(t, srv.Client(t), Config{Namespace: greedy.set.Namespace, TTL: ttl})
	c := srv.Client(t)

	l, err := greedy.Acquire(ctx, "k")
	require.NoError(t, err)
	lockKey := l.lockKey

	// Held well past its TTL by renewals alone, and still valid.
	require.Eventually(t, func() bool {
		return h.Sum(t, obs.LeaseRenewals, telemetrytest.Attrs(obs.AttrLockName, "greedy", obs.AttrResult, "renewed")) >= 3
	}, 10*time.Second, 5*time.Millisecond, "the holder is not renewing")
	require.NoError(t, l.Commit(ctx, func(context.Context, fence.Token) error { return nil }), "a renewed lease commits")
	_, err = other.Acquire(ctx, "k")
	require.ErrorIs(t, err, ErrNotAcquired, "while renewed, the lease is exclusive")

	cause := waitDone(t, l, 10*time.Second)
	assert.Equal(t, LossMaxHold, lossReason(t, cause))
	losses := h.Logs.Wait(t, "lease lost", 1)
	require.Len(t, losses, 1)
	assert.Equal(t, string(LossMaxHold), losses[0].Attrs[obs.AttrReason])
	held := l.lostAt - l.sentAt
	assert.GreaterOrEqual(t, held, maxHold, "not stopped before its max hold")
	assert.Less(t, held, maxHold+ttl, "stopped at its max hold, not later")
	require.ErrorIs(t, l.Commit(ctx, func(context.Context, fence.Token) error { return nil }), ErrLost)
	h.EventuallySum(t, obs.LeaseLosses, telemetrytest.Attrs(obs.AttrLockName, "greedy", obs.AttrReason, "max_hold"), 1)

	// Nobody released it and renewal stopped: the key expires by its TTL.
	require.Eventually(t, func() bool { return c.Exists(ctx, lockKey).Val() == 0 }, 10*time.Second, 5*time.Millisecond,
		"the key outlived its TTL after max hold")
	for _, r := range obs.ReleaseResults {
		assert.Zero(t, h.Sum(t, obs.LeaseReleases, telemetrytest.Attrs(obs.AttrLockName, "greedy", obs.AttrResult, string(r))),
			"the key was freed by expiry, not by a release")
	}
	next, err := with(t, other, Config{Wait: 5 * time.Second}).Acquire(ctx, "k")
	require.NoError(t, err)
	defer next.Release(ctx)
	assert.Greater(t, next.Fence(), l.Fence())

	require.ErrorIs(t, l.Release(ctx), ErrNotHeld)
	owner, err := c.Get(ctx, lockKey).Result()
	require.NoError(t, err, "the stopped holder's Release must not free the new holder's key")
	assert.Equal(t, ownerOf(next), owner)
}
