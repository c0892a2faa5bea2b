package browsertest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPainted: a blank (one colour) or black screenshot fails, one of the
// wrong size fails, and a page with text-like detail passes.
func TestPainted(t *testing.T) {
	encode := func(img image.Image) []byte {
		var b bytes.Buffer
		require.NoError(t, png.Encode(&b, img))
		return b.Bytes()
	}
	uniform := func(c color.Color) []byte {
		img := image.NewRGBA(image.Rect(0, 0, 100, 50))
		for y := range 50 {
			for x := range 100 {
				img.Set(x, y, c)
			}
		}
		return encode(img)
	}
	drawn := image.NewRGBA(image.Rect(0, 0, 100, 50))
	for y := range 50 {
		for x := range 100 {
			drawn.Set(x, y, color.White)
			if y%5 == 0 {
				drawn.Set(x, y, color.RGBA{R: uint8(x), G: uint8(2 * x), B: 90, A: 255})
			}
		}
	}

	_, err := Painted(uniform(color.White), 100, 50)
	require.ErrorContains(t, err, "blank", "a white page")
	_, err = Painted(uniform(color.Black), 100, 50)
	require.ErrorContains(t, err, "blank", "a black page")
	_, err = Painted(encode(drawn), 200, 50)
	require.ErrorContains(t, err, "want 200x50")
	_, err = Painted([]byte("not a png"), 100, 50)
	require.ErrorContains(t, err, "not a PNG")
	_, err = Painted(encode(drawn), 100, 50)
	assert.NoError(t, err)
}
