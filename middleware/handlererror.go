package middleware

import (
	"errors"

	"google.golang.org/grpc/status"

	"github.com/lockwatch/lockwatch/fence"
	"github.com/lockwatch/lockwatch/lease"
)

// handlerRefusal is the table's row for an error a holder's handler
// returns, if it has one: the outcomes of Commit and of the write in it.
// A token refusal other than stale (foreign, forged, ...) of the holder's
// own token is the service's misconfiguration, not the client's: it has
// none.
func handlerRefusal(err error) (refusal, bool) {
	switch {
	case err == nil:
		return refusal{}, false
	case errors.Is(err, fence.ErrStale):
		return refuseStale, true
	case errors.Is(err, lease.ErrExpiring):
		return refuseExpiring, true
	case errors.Is(err, lease.ErrLost):
		return refuseLost, true
	}
	return refusal{}, false
}

// handlerStatus is a gRPC handler's error as the interceptors return it:
// the table's status for an error handlerRefusal knows, unless the handler
// made a status of its own; else err as it is.
func handlerStatus(name string, err error) error {
	if _, own := status.FromError(err); own {
		return err
	}
	if ref, ok := handlerRefusal(err); ok {
		return ref.grpcStatus(name, err)
	}
	return err
}
