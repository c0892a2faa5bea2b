package browsertest

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
)

// Painted checks that data is a PNG of width×height pixels with something
// drawn on it: at least a few distinct colours, and some pixels that differ
// from the most common one (the background). A blank or black screenshot,
// the usual failure of a headless browser without fonts or a display, fails.
// It returns the decoded image.
func Painted(data []byte, width, height int) (image.Image, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a PNG: %w", err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		return img, fmt.Errorf("%dx%d pixels, want %dx%d", b.Dx(), b.Dy(), width, height)
	}
	counts := map[[4]uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			counts[[4]uint32{r, g, bl, a}]++
		}
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	total := width * height
	if len(counts) < 16 {
		return img, fmt.Errorf("only %d distinct colours: a blank page", len(counts))
	}
	if drawn := total - most; drawn < total/200 {
		return img, fmt.Errorf("only %d of %d pixels differ from the background", drawn, total)
	}
	return img, nil
}
