package main

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// writePlot draws two panels against N: time to converge, and API requests
// per MCPServer. Plain image drawing keeps the benchmark free of a plotting
// dependency.
func writePlot(path string, results []*result) error {
	const w, h = 1000, 420
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	var xs, times, reqs []float64
	for _, r := range results {
		xs = append(xs, float64(r.N))
		times = append(times, r.createSeconds)
		reqs = append(reqs, r.requestsPerObject())
	}
	panel(img, image.Rect(10, 10, w/2-10, h-10), "time to converge (s) vs N", xs, times, color.RGBA{0x1f, 0x77, 0xb4, 0xff})
	panel(img, image.Rect(w/2+10, 10, w-10, h-10), "API requests per MCPServer vs N", xs, reqs, color.RGBA{0xd6, 0x27, 0x28, 0xff})
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func text(img *image.RGBA, x, y int, s string) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	steps := int(math.Max(math.Abs(float64(x1-x0)), math.Abs(float64(y1-y0))))
	for i := 0; i <= steps; i++ {
		t := 0.0
		if steps > 0 {
			t = float64(i) / float64(steps)
		}
		x := int(math.Round(float64(x0) + t*float64(x1-x0)))
		y := int(math.Round(float64(y0) + t*float64(y1-y0)))
		img.Set(x, y, c)
		img.Set(x, y+1, c)
	}
}

func panel(img *image.RGBA, r image.Rectangle, title string, xs, ys []float64, c color.Color) {
	left, right, top, bottom := r.Min.X+60, r.Max.X-20, r.Min.Y+30, r.Max.Y-40
	text(img, r.Min.X+60, r.Min.Y+15, title)
	grey := color.Gray{0x99}
	line(img, left, bottom, right, bottom, grey)
	line(img, left, top, left, bottom, grey)
	if len(xs) == 0 {
		return
	}
	maxX, maxY := 0.0, 0.0
	for i := range xs {
		maxX = math.Max(maxX, xs[i])
		maxY = math.Max(maxY, ys[i])
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY *= 1.15
	px := func(x float64) int { return left + int(float64(right-left)*x/maxX) }
	py := func(y float64) int { return bottom - int(float64(bottom-top)*y/maxY) }
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		y := py(v)
		line(img, left-4, y, left, y, grey)
		text(img, r.Min.X+5, y+4, fmt.Sprintf("%.1f", v))
	}
	for i := range xs {
		x, y := px(xs[i]), py(ys[i])
		text(img, x-12, bottom+16, fmt.Sprintf("%.0f", xs[i]))
		for dx := -3; dx <= 3; dx++ {
			for dy := -3; dy <= 3; dy++ {
				img.Set(x+dx, y+dy, c)
			}
		}
		text(img, x+6, y-6, fmt.Sprintf("%.2f", ys[i]))
		if i > 0 {
			line(img, px(xs[i-1]), py(ys[i-1]), x, y, c)
		}
	}
	text(img, (left+right)/2-30, bottom+32, "N (MCPServers)")
}
