package lease_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/internal/leasekeys"
	"github.com/lockwatch/lockwatch/internal/testenv/redisacl"
	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
	"github.com/lockwatch/lockwatch/lease"
)

// The Redis ACLs of SECURITY.md (internal/testenv/redisacl), applied to a real
// redis-server: a Locker's user and an operator's can do all their work
// and nothing outside their namespace, and a user missing a permission
// fails closed.

// subscribed tells whether someone subscribes to a grant channel in
// namespace ns (leasekeys.GrantChannel: a Locker's).
func subscribed(t *testing.T, s *redisacl.Server, ns string) bool {
	t.Helper()
	chans, err := s.Admin.PubSubChannels(aclCtx(t), leasekeys.GrantChannel(redisacl.Escape(ns), "*")).Result()
	require.NoError(t, err)
	return len(chans) > 0
}

// subscriptions returns the channels of namespace ns that someone
// subscribes to.
func subscriptions(t *testing.T, s *redisacl.Server, ns string) []string {
	t.Helper()
	chans, err := s.Admin.PubSubChannels(aclCtx(t), redisacl.Escape(ns)+":{*").Result()
	require.NoError(t, err)
	return chans
}

// lockKeys returns the lock keys (":l") in namespace ns.
func lockKeys(t *testing.T, s *redisacl.Server, ns string) []string {
	t.Helper()
	keys, err := s.Admin.Keys(aclCtx(t), redisacl.Escape(ns)+":{*}:l").Result()
	require.NoError(t, err)
	return keys
}

func aclCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func aclLocker(t *testing.T, c redis.UniversalClient, cfg lease.Config) *lease.Locker {
	t.Helper()
	lk := lease.NewLocker(c, cfg)
	t.Cleanup(func() { _ = lk.Close() })
	return lk
}

func aclWith(t *testing.T, lk *lease.Locker, cfg lease.Config) *lease.Locker {
	t.Helper()
	derived, err := lk.With(cfg)
	require.NoError(t, err)
	return derived
}

// TestLockerACL: a Locker whose user has SECURITY.md's Locker rules
// acquires, renews, releases, waits with wake-ups, checks its server and
// acks, and meets no refusal doing it; it cannot touch another namespace's
// keys, a store's marks, or anything else.
func TestLockerACL(t *testing.T) {
	// Every channel by default, as Redis 6.2 has it: the rules still grant
	// only the namespace's.
	s := redisacl.Start(t, "--acl-pubsub-default", "allchannels")
	ctx := aclCtx(t)
	ns := redisacl.LeaseNamespace
	c := s.User(t, redisacl.LockerUser, redisacl.Locker(ns))
	lk := aclLocker(t, c, lease.Config{})

	t.Run("handshake", func(t *testing.T) {
		// go-redis logs in with HELLO 3 AUTH, which needs no grant (no-auth
		// commands pass the command check): the connection speaks RESP3 as
		// the user.
		require.NoError(t, c.Ping(ctx).Err())
		list, err := s.Admin.ClientList(ctx).Result()
		require.NoError(t, err)
		assert.Regexp(t, `(?m)^.* user=`+redisacl.LockerUser+` .*resp=3( |$)`, list)

		// What go-redis sends after HELLO for options that lockwatch does
		// not set is a further grant: its failure fails the connection.
		for _, o := range []struct {
			name string
			set  func(*redis.Options)
		}{
			{"ClientName", func(o *redis.Options) { o.ClientName = "svc" }},
			{"DB", func(o *redis.Options) { o.DB = 1 }},
		} {
			err := s.User(t, "lockwatch-"+o.name, redisacl.Locker(ns), o.set).Ping(ctx).Err()
			redisacl.RequireRefused(t, err, "a connection with "+o.name)
			t.Logf("%s: %v", o.name, err)
		}
	})

	t.Run("check", func(t *testing.T) {
		require.NoError(t, lk.Check(ctx))
	})

	t.Run("check without EVAL", func(t *testing.T) {
		c := s.User(t, "lockwatch-no-eval", redisacl.Without(redisacl.Locker(ns), "+eval"))
		err := aclLocker(t, c, lease.Config{}).Check(ctx)
		redisacl.RequireRefused(t, err, "a check without +eval")
		assert.Contains(t, err.Error(), "refuses EVAL to this user")
	})

	t.Run("acquire, renew, release", func(t *testing.T) {
		const ttl = 300 * time.Millisecond
		l, err := aclWith(t, lk, lease.Config{TTL: ttl}).Acquire(ctx, "acl-renew")
		require.NoError(t, err)
		// Three TTLs: unrenewed, the lease would be lost after one.
		time.Sleep(3 * ttl)
		require.NoError(t, l.Err(), "renewed")
		info, err := lk.Inspect(ctx, "acl-renew")
		require.NoError(t, err)
		assert.True(t, info.Held)
		assert.Positive(t, info.TTL)
		assert.Equal(t, l.Fence(), info.Fence)
		require.NoError(t, l.Release(ctx))
		info, err = lk.Inspect(ctx, "acl-renew")
		require.NoError(t, err)
		assert.False(t, info.Held, "released")
	})

	t.Run("a release wakes the waiter", func(t *testing.T) {
		// With a backoff of up to 2 s, each round's waiter holds the key
		// within 200 ms of the release: by polling alone each round had a
		// chance of about 10%, all four of 1 in 10 000.
		waiting, err := lk.With(lease.Config{Wait: 10 * time.Second, BackoffMin: 2 * time.Second, BackoffMax: 2 * time.Second})
		require.NoError(t, err)
		for round := range 4 {
			key := "acl-wait-" + strconv.Itoa(round)
			holder, err := lk.Acquire(ctx, key)
			require.NoError(t, err)
			got := make(chan error, 1)
			go func() {
				l, err := waiting.Acquire(ctx, key)
				if err == nil {
					err = l.Release(ctx)
				}
				got <- err
			}()
			require.Eventually(t, func() bool { return subscribed(t, s, ns) },
				5*time.Second, 5*time.Millisecond, "the waiter subscribes to its Locker's grant channel")
			time.Sleep(20 * time.Millisecond) // past the attempt that follows the subscription
			released := time.Now()
			require.NoError(t, holder.Release(ctx))
			select {
			case err := <-got:
				require.NoError(t, err)
				assert.Less(t, time.Since(released), 200*time.Millisecond, "round %d: woken by the release, not by the backoff", round)
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: the waiter still waits 5 s after the release", round)
			}
		}
	})

	t.Run("replication ack", func(t *testing.T) {
		// WAIT runs: with no replica it answers 0, which is not enough,
		// where a refused WAIT would say NOPERM.
		_, err := aclWith(t, lk, lease.Config{ReplicationAcks: 1, ReplicationTimeout: 50 * time.Millisecond}).Acquire(ctx, "acl-ack")
		require.Error(t, err)
		assert.False(t, redisacl.Refused(err), "%v", err)
		assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged")
	})

	// Checked before the refusals below, which are the test's own doing.
	assert.Empty(t, s.Refusals(t, redisacl.LockerUser), "the Locker rules are all a Locker needs")

	t.Run("no other namespace", func(t *testing.T) {
		other, err := lk.With(lease.Config{Namespace: "billing", Wait: 5 * time.Second})
		require.NoError(t, err)
		start := time.Now()
		l, err := other.Acquire(ctx, "acl-other")
		redisacl.RequireRefused(t, err, "an acquire in another namespace")
		assert.Nil(t, l)
		assert.Less(t, time.Since(start), time.Second, "a refusal ends the wait at once")
		_, err = other.Inspect(ctx, "acl-other")
		redisacl.RequireRefused(t, err, "an inspect in another namespace")
		assert.Empty(t, lockKeys(t, s, "billing"))

		// Nor by hand: not another namespace's lease, not a fenced store's
		// marks (their default namespace starts with the lease's), not even
		// from a script, which runs with the caller's ACL.
		storeKey := redisacl.StoreNamespace + ":orders:{0123456789abcdef0123456789abcdef}"
		redisacl.RequireRefused(t, c.Get(ctx, "billing:{0123456789abcdef0123456789abcdef}:l").Err(), "GET of another namespace's lock")
		redisacl.RequireRefused(t, c.HSet(ctx, storeKey, "fence", "9").Err(), "HSET of a store's mark")
		redisacl.RequireRefused(t, c.Eval(ctx, "return redis.call('HSET', KEYS[1], 'fence', '9')", []string{storeKey}).Err(), "a script naming a store's mark")
		redisacl.RequireRefused(t, c.Eval(ctx, "return redis.call('HSET', '"+storeKey+"', 'fence', '9')", nil).Err(), "a script writing a store's mark it does not name")
		redisacl.RequireRefused(t, c.Eval(ctx, "return redis.call('FLUSHALL')", nil).Err(), "FLUSHALL from a script")
		redisacl.RequireRefused(t, c.Publish(ctx, "billing:{0123456789abcdef0123456789abcdef}:r", "").Err(), "PUBLISH on another namespace's channel")
		redisacl.RequireRefused(t, c.Keys(ctx, "*").Err(), "KEYS")
		redisacl.RequireRefused(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(), "CONFIG SET")
		n, err := s.Admin.Exists(ctx, storeKey).Result()
		require.NoError(t, err)
		assert.Zero(t, n, "nothing written")
	})

	t.Run("a namespace with glob characters", func(t *testing.T) {
		// Escaped, "jobs*" is that namespace only, not every one that
		// starts with "jobs".
		c := s.User(t, "lockwatch-jobs", redisacl.Locker("jobs*"))
		jobs := aclLocker(t, c, lease.Config{Namespace: "jobs*"})
		l, err := jobs.Acquire(ctx, "acl-glob")
		require.NoError(t, err)
		require.NoError(t, l.Release(ctx))
		jobsX, err := jobs.With(lease.Config{Namespace: "jobsX"})
		require.NoError(t, err)
		_, err = jobsX.Acquire(ctx, "acl-glob")
		redisacl.RequireRefused(t, err, "an acquire in jobsX under the rules of jobs*")
	})
}

// TestLockerACLMissing: a Locker user missing one permission of the rules
// fails closed: its acquire is refused with the server's ACL error and
// writes nothing, or, missing the channels, its waits do without wake-ups
// and still end.
func TestLockerACLMissing(t *testing.T) {
	s := redisacl.Start(t)
	ctx := aclCtx(t)
	ns := redisacl.LeaseNamespace

	t.Run("no channels", func(t *testing.T) {
		const user = "lockwatch-nochannels"
		c := s.User(t, user, redisacl.Without(redisacl.Locker(ns), "&"+ns+":{*"))
		lk := aclLocker(t, c, lease.Config{})
		holder, err := lk.Acquire(ctx, "acl-nochannels")
		require.NoError(t, err)
		waiting := aclWith(t, lk, lease.Config{Wait: 10 * time.Second, BackoffMin: 50 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
		got := make(chan error, 1)
		go func() {
			l, err := waiting.Acquire(ctx, "acl-nochannels")
			if err == nil {
				err = l.Release(ctx)
			}
			got <- err
		}()
		require.Eventually(t, func() bool {
			for _, d := range s.Refusals(t, user) {
				if d.Reason == "channel" && d.Context == "toplevel" {
					return true
				}
			}
			return false
		}, 5*time.Second, 5*time.Millisecond, "the waiter's SUBSCRIBE is refused")
		assert.Empty(t, subscriptions(t, s, ns), "nobody subscribed")
		require.NoError(t, holder.Release(ctx))
		select {
		case err := <-got:
			require.NoError(t, err, "the waiter polls and gets the key")
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter still waits 5 s after the release")
		}
		var published bool
		for _, d := range s.Refusals(t, user) {
			published = published || d.Reason == "channel" && d.Context == "lua"
		}
		assert.True(t, published, "the release's PUBLISH is refused inside its script, which goes on")
	})

	for _, tc := range []struct {
		name, drop string
	}{
		{"no EVALSHA", "+evalsha"},           // refused before the script: NOPERM
		{"no TIME", "+time"},                 // refused inside acquire.lua, before it writes
		{"no key pattern", "~" + ns + ":{*"}, // refused before the script: NOPERM
		{"no SET", "+set"},                   // refused at the script's first write
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := "lockwatch-" + strings.ReplaceAll(tc.name, " ", "-")
			c := s.User(t, user, redisacl.Without(redisacl.Locker(ns), tc.drop))
			lk := aclLocker(t, c, lease.Config{Wait: 5 * time.Second})
			start := time.Now()
			l, err := lk.Acquire(ctx, "acl-"+user)
			redisacl.RequireRefused(t, err, "an acquire without "+tc.drop)
			assert.Nil(t, l)
			require.NotErrorIs(t, err, lease.ErrNotAcquired, "a refusal is not contention: %v", err)
			assert.Less(t, time.Since(start), time.Second, "a refusal ends the wait at once")
			assert.Empty(t, lockKeys(t, s, ns), "no lock written")
			t.Logf("%s: %v", tc.name, err)
		})
	}
}

// TestOperatorACL: the operator's rules inspect and force-release a
// Locker's lease (its holder then loses it, and a waiter is woken), in
// their namespace only; an operator missing DEL changes nothing.
func TestOperatorACL(t *testing.T) {
	s := redisacl.Start(t, "--acl-pubsub-default", "allchannels")
	ctx := aclCtx(t)
	ns := redisacl.LeaseNamespace
	holders := aclLocker(t, s.User(t, redisacl.LockerUser, redisacl.Locker(ns)), lease.Config{TTL: 600 * time.Millisecond})
	opClient := s.User(t, redisacl.OperatorUser, redisacl.Operator(ns))
	op := aclLocker(t, opClient, lease.Config{})

	t.Run("inspect and force release", func(t *testing.T) {
		l, err := holders.Acquire(ctx, "acl-stuck")
		require.NoError(t, err)
		waiting := aclWith(t, holders, lease.Config{Wait: 10 * time.Second})
		waiter := make(chan error, 1)
		go func() {
			l, err := waiting.Acquire(ctx, "acl-stuck")
			if err == nil {
				err = l.Release(ctx)
			}
			waiter <- err
		}()
		require.Eventually(t, func() bool { return subscribed(t, s, ns) },
			5*time.Second, 5*time.Millisecond, "the waiter subscribes")
		// The force release's wake-up, seen by a subscriber of the default
		// user.
		wakeups := s.Admin.PSubscribe(ctx, redisacl.Escape(ns)+":{*")
		t.Cleanup(func() { _ = wakeups.Close() })
		_, err = wakeups.Receive(ctx) // the subscription's confirmation
		require.NoError(t, err)

		info, err := op.Inspect(ctx, "acl-stuck")
		require.NoError(t, err)
		require.True(t, info.Held)
		assert.Equal(t, l.Fence(), info.Fence)
		forced, err := op.ForceRelease(ctx, "acl-stuck", info.Holder)
		require.NoError(t, err)
		assert.Equal(t, info.Holder, forced.Holder)

		msg, err := wakeups.ReceiveMessage(ctx)
		require.NoError(t, err)
		assert.True(t, strings.HasSuffix(msg.Channel, ":g"), "published on a grant channel: %s", msg.Channel)
		select {
		case <-l.Context().Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the holder still holds 5 s after the force release")
		}
		var lost *lease.LostError
		require.ErrorAs(t, l.Err(), &lost)
		assert.Equal(t, lease.LossForceReleased, lost.Reason)
		select {
		case err := <-waiter:
			require.NoError(t, err, "the waiter gets the key")
		case <-time.After(5 * time.Second):
			t.Fatal("the waiter still waits 5 s after the force release")
		}
	})

	t.Run("ping and replication ack", func(t *testing.T) {
		// lockwatch inspect and release PING first; WAIT follows a force
		// release when the Locker asks for acks (with no replica: 0).
		require.NoError(t, opClient.Ping(ctx).Err())
		acked, err := op.With(lease.Config{ReplicationAcks: 1, ReplicationTimeout: 50 * time.Millisecond})
		require.NoError(t, err)
		_, err = acked.ForceRelease(ctx, "acl-free", "0123456789ab")
		require.Error(t, err)
		assert.False(t, redisacl.Refused(err), "%v", err)
		assert.Contains(t, err.Error(), "0 of 1 replicas acknowledged")
	})

	assert.Empty(t, s.Refusals(t, redisacl.OperatorUser), "the operator rules are all Inspect and ForceRelease need")
	assert.Empty(t, s.Refusals(t, redisacl.LockerUser))

	t.Run("a Locker's user can do it too", func(t *testing.T) {
		// ACLs cannot tell a Locker from the operator (SECURITY.md): the
		// operator's rules are a subset of a Locker's.
		l, err := holders.Acquire(ctx, "acl-peer")
		require.NoError(t, err)
		info, err := holders.Inspect(ctx, "acl-peer")
		require.NoError(t, err)
		_, err = holders.ForceRelease(ctx, "acl-peer", info.Holder)
		require.NoError(t, err)
		select {
		case <-l.Context().Done():
		case <-time.After(5 * time.Second):
			t.Fatal("the holder still holds 5 s after the force release")
		}
		assert.Empty(t, s.Refusals(t, redisacl.LockerUser))
	})

	t.Run("no other namespace", func(t *testing.T) {
		billing, err := op.With(lease.Config{Namespace: "billing"})
		require.NoError(t, err)
		_, err = billing.Inspect(ctx, "acl-stuck")
		redisacl.RequireRefused(t, err, "an inspect in another namespace")
		_, err = billing.ForceRelease(ctx, "acl-stuck", "0123456789ab")
		redisacl.RequireRefused(t, err, "a force release in another namespace")
	})

	t.Run("no DEL", func(t *testing.T) {
		weak := aclLocker(t, s.User(t, "lockwatch-operator-nodel", redisacl.Without(redisacl.Operator(ns), "+del")), lease.Config{})
		l, err := holders.Acquire(ctx, "acl-nodel")
		require.NoError(t, err)
		info, err := weak.Inspect(ctx, "acl-nodel")
		require.NoError(t, err)
		_, err = weak.ForceRelease(ctx, "acl-nodel", info.Holder)
		redisacl.RequireRefused(t, err, "a force release without DEL")
		time.Sleep(700 * time.Millisecond) // past a TTL: renewals go on
		require.NoError(t, l.Err(), "the holder keeps its lease")
		after, err := op.Inspect(ctx, "acl-nodel")
		require.NoError(t, err)
		assert.True(t, after.Held)
		assert.Equal(t, info.Holder, after.Holder)
		require.NoError(t, l.Release(ctx))
	})
}

// TestLockerACLOnCluster: on Redis Cluster, the Locker rules with
// Cluster's additions, set on every node, are all a Locker needs (check,
// acquire, release, a woken wait); without CLUSTER SLOTS go-redis cannot
// route.
func TestLockerACLOnCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 1)
	ctx := aclCtx(t)
	rules := append(redisacl.Locker(redisacl.LeaseNamespace), redisacl.Cluster...)
	lk := aclLocker(t, redisacl.ClusterUser(t, cl, redisacl.LockerUser, rules), lease.Config{})
	require.NoError(t, lk.Check(ctx))
	holder, err := lk.Acquire(ctx, "acl-cluster")
	require.NoError(t, err)
	waiting := aclWith(t, lk, lease.Config{Wait: 10 * time.Second})
	got := make(chan error, 1)
	go func() {
		l, err := waiting.Acquire(ctx, "acl-cluster")
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	node := redisacl.On(t, cl.Nodes()[0])
	require.Eventually(t, func() bool { return subscribed(t, node, redisacl.LeaseNamespace) },
		5*time.Second, 5*time.Millisecond, "the waiter subscribes")
	require.NoError(t, holder.Release(ctx))
	select {
	case err := <-got:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter still waits 5 s after the release")
	}
	for _, n := range cl.Nodes() {
		assert.Empty(t, redisacl.On(t, n).Refusals(t, redisacl.LockerUser), "node %s", n.Addr())
	}

	noSlots := redisacl.ClusterUser(t, cl, "lockwatch-noslots", redisacl.Without(rules, "+cluster|slots"))
	_, err = aclLocker(t, noSlots, lease.Config{}).Acquire(ctx, "acl-cluster")
	redisacl.RequireRefused(t, err, "an acquire without CLUSTER SLOTS")

	// Without COMMAND go-redis logs the refusal and routes all the same.
	noCommand := redisacl.ClusterUser(t, cl, "lockwatch-nocommand", redisacl.Without(rules, "+command"))
	l, err := aclLocker(t, noCommand, lease.Config{}).Acquire(ctx, "acl-cluster")
	require.NoError(t, err)
	require.NoError(t, l.Release(ctx))
	assert.Contains(t, node.Refusals(t, "lockwatch-nocommand"), redisacl.Denial{Reason: "command", Context: "toplevel", Object: "command"})
}
