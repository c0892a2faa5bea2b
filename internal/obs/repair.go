package obs

import (
	"context"
	"log/slog"
)

// FenceRepaired records an operator's repair of a resource's high-water
// mark (fence.RedisStore.Repair): the mark, before, was ahead of every fence
// minted for its key and is now after, the newest fence minted or the
// store's clock, whichever is later. Counted, and logged at Warn: a mark
// set back lets writes through that it refused, so an operator must be able
// to find afterwards who did it and from what; and a mark that a token no
// lease carried had moved ahead is worth a look at where that token came
// from. key is the caller's key, shown only with raw keys; keyHash its hash
// as in the store's Redis key.
func (t *Recorder) FenceRepaired(ctx context.Context, resource, key, keyHash string, before, after int64) {
	t.fenceRepairs.Add(ctx, 1, t.resource(resource, "", "").add...)
	keyAttr := slog.String(AttrKeyHash, keyHash)
	if t.rawKeys {
		keyAttr = slog.String(AttrKey, key)
	}
	t.warn(ctx, "lockwatch: fence mark set back below a token no lease carried", slog.String(AttrResource, resource),
		keyAttr, slog.Int64(AttrHighWater, before), slog.Int64(AttrFence, after))
}
