package lease

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// The loss reasons are the reason label's values: each one of the public
// type spells its metric label, and none is missing.
func TestLossReasonsAreTheLabels(t *testing.T) {
	public := []LossReason{LossRenewalRejected, LossForceReleased, LossRenewalUnknown, LossDeadline,
		LossMaxHold, LossClosed, LossYielded}
	labels := make([]LossReason, 0, len(obs.LossReasons))
	for _, r := range obs.LossReasons {
		labels = append(labels, LossReason(r))
	}
	assert.Equal(t, labels, public)
}
