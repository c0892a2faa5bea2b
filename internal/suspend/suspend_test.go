package suspend

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestEmulateOnlyMovesForward(t *testing.T) {
	before := Offset()
	Emulate(time.Second)
	assert.Equal(t, before+time.Second, Offset())
	assert.Panics(t, func() { Emulate(-time.Nanosecond) })
	assert.Equal(t, before+time.Second, Offset(), "a refused jump moves nothing")
}
