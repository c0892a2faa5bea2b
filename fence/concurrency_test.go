package fence_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/fence"
)

const (
	writers         = 16
	writesPerWriter = 40
)

// attempt is one write of a concurrent run: its token, its outcome and its
// place in time. start and end come from one counter, so a.end < b.start
// means a returned before b was sent.
type attempt struct {
	token      int64 // the fence
	accepted   bool
	highWater  int64
	start, end int64
}

// hammer runs writers goroutines that each write writesPerWriter random
// fences to one key. Fences come from the 200 microseconds before the
// start, so many repeat (strictness) and none is ahead of the stores'
// clocks. (TestRedisLargeTokens covers the fences beyond a double's
// precision.)
func hammer(t *testing.T, write func(ctx context.Context, writer int, token int64) error) []attempt {
	t.Helper()
	ctx := testCtx(t)
	base := time.Now().UnixMicro() - 200
	var clock atomic.Int64
	results := make([][]attempt, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for range writesPerWriter {
				a := attempt{token: base + rng.Int64N(200) + 1}
				a.start = clock.Add(1)
				err := write(ctx, w, a.token)
				a.end = clock.Add(1)
				var se *fence.StaleError
				switch {
				case err == nil:
					a.accepted = true
				case errors.As(err, &se):
					a.highWater = se.HighWater
				default:
					t.Errorf("writer %d, token %d: %v", w, a.token, err)
					return
				}
				results[w] = append(results[w], a)
			}
		})
	}
	wg.Wait()
	var all []attempt
	for _, r := range results {
		all = append(all, r...)
	}
	require.Len(t, all, writers*writesPerWriter, "every write either accepted or rejected")
	return all
}

// verify checks a run against the fence's contract and returns the number
// of accepted and rejected writes and the largest token accepted:
//   - accepted tokens are distinct (strict >);
//   - a write whose token is at or below one accepted before it was sent was
//     rejected, with a high-water mark at least its token, that some write
//     had set;
//   - the largest token of the run was accepted (nothing could be newer).
func verify(t *testing.T, all []attempt) (accepted, rejected int64, top int64) {
	t.Helper()
	acceptedTokens := map[int64]bool{}
	var maxToken int64
	for _, a := range all {
		maxToken = max(maxToken, a.token)
		if a.accepted {
			require.False(t, acceptedTokens[a.token], "token %d accepted twice", a.token)
			acceptedTokens[a.token] = true
			accepted++
			top = max(top, a.token)
		} else {
			rejected++
		}
	}
	for _, w := range all {
		if !w.accepted {
			assert.GreaterOrEqual(t, w.highWater, w.token, "a rejection reports a mark at or above the token")
			assert.True(t, acceptedTokens[w.highWater], "the mark %d was set by an accepted write", w.highWater)
		}
		for _, a := range all {
			if a.accepted && a.end < w.start && w.token <= a.token {
				require.False(t, w.accepted, "token %d accepted after %d had been", w.token, a.token)
			}
		}
	}
	assert.Equal(t, maxToken, top, "the newest token of the run was accepted")
	assert.EqualValues(t, len(all), accepted+rejected)
	return accepted, rejected, top
}

func testRedisConcurrent(t *testing.T, b backend) {
	ctx := testCtx(t)
	h := newHarness(t)
	s := fence.NewRedisStore(b.client, "hammered", fence.RedisConfig{Telemetry: h.Tel})
	all := hammer(t, func(ctx context.Context, _ int, n int64) error {
		return s.Write(ctx, "one-key", tk("one-key", n), []byte(strconv.FormatInt(n, 10)))
	})
	accepted, rejected, top := verify(t, all)
	assert.Positive(t, rejected, "tokens repeat, so some writes must be refused")

	v, mark, err := s.Read(ctx, "one-key")
	require.NoError(t, err)
	assert.Equal(t, top, mark, "the stored mark is the largest accepted token")
	assert.Equal(t, strconv.FormatInt(top, 10), string(v), "and the value is that write's")
	assert.Equal(t, counts{accepted: accepted, rejected: rejected, rejections: rejected}, h.counts(t, "hammered"))
}
