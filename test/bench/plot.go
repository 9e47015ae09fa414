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

// series is one line of a panel.
type series struct {
	name string
	ys   []float64
	c    color.RGBA
}

// writePlot draws two log–log panels against N: seconds (hot create, cold
// start, delete, the two floors) and bytes (written to the API server, sent to watchers),
// each with a dashed line of slope 1 through the first point of its first
// series: linear growth runs parallel to it, quadratic growth twice as
// steep. Plain image drawing keeps the benchmark free of a plotting
// dependency.
func writePlot(path string, results []*result) error {
	const w, h = 1100, 460
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	var xs []float64
	var hot, cold, del, floor, spec, written, watched []float64
	for _, r := range results {
		xs = append(xs, float64(r.N))
		hot = append(hot, r.createSeconds)
		cold = append(cold, r.coldSeconds)
		del = append(del, r.deleteSeconds)
		floor = append(floor, r.floorSeconds)
		spec = append(spec, r.specFloorSeconds)
		written = append(written, r.createAPI.writeBytes)
		watched = append(watched, r.createAPI.watchBytes)
	}
	blue, red, green, grey := color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff}
	orange := color.RGBA{0xff, 0x7f, 0x0e, 0xff}
	logPanel(img, image.Rect(10, 10, w/2-10, h-10), "seconds vs N (log-log)", xs,
		[]series{{"hot create", hot, blue}, {"cold start", cold, red}, {"delete all", del, green}, {"raw-client floor", floor, grey}, {"request floor", spec, orange}})
	logPanel(img, image.Rect(w/2+10, 10, w-10, h-10), "bytes during create vs N (log-log)", xs,
		[]series{{"written to API server", written, blue}, {"sent to watchers", watched, red}})
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return png.Encode(f, img)
}

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := &font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// line draws from (x0,y0) to (x1,y1); dashed skips every other 6 pixels.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color, dashed bool) {
	steps := int(math.Max(math.Abs(float64(x1-x0)), math.Abs(float64(y1-y0))))
	for i := 0; i <= steps; i++ {
		if dashed && (i/6)%2 == 1 {
			continue
		}
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

func logPanel(img *image.RGBA, r image.Rectangle, title string, xs []float64, ss []series) {
	left, right, top, bottom := r.Min.X+70, r.Max.X-20, r.Min.Y+30, r.Max.Y-70
	black, grey := color.Black, color.Gray{0x99}
	text(img, left, r.Min.Y+15, title, black)
	line(img, left, bottom, right, bottom, grey, false)
	line(img, left, top, left, bottom, grey, false)
	if len(xs) == 0 {
		return
	}
	minX, maxX := xs[0], xs[len(xs)-1]
	minY, maxY := math.Inf(1), math.Inf(-1)
	for _, s := range ss {
		for _, y := range s.ys {
			if y > 0 {
				minY, maxY = math.Min(minY, y), math.Max(maxY, y)
			}
		}
	}
	if math.IsInf(minY, 0) {
		return
	}
	// Leave room for the linear reference over the whole range of N.
	lx0, lx1 := math.Log10(minX), math.Log10(math.Max(maxX, minX*10))
	ly0, ly1 := math.Log10(minY)-0.2, math.Log10(maxY)+0.3
	px := func(x float64) int { return left + int(float64(right-left)*(math.Log10(x)-lx0)/(lx1-lx0)) }
	py := func(y float64) int { return bottom - int(float64(bottom-top)*(math.Log10(y)-ly0)/(ly1-ly0)) }
	for e := math.Ceil(ly0); e <= ly1; e++ {
		y := py(math.Pow(10, e))
		line(img, left-4, y, left, y, grey, false)
		text(img, r.Min.X+5, y+4, human(math.Pow(10, e)), black)
	}
	for _, x := range xs {
		text(img, px(x)-12, bottom+16, fmt.Sprintf("%.0f", x), black)
	}
	text(img, (left+right)/2-30, bottom+32, "N (MCPServers)", black)
	if y0 := ss[0].ys[0]; y0 > 0 {
		// y = y0 * x / minX: slope 1 on log–log axes.
		line(img, px(minX), py(y0), px(maxX), py(y0*maxX/minX), grey, true)
	}
	legendX := left + 10
	for _, s := range ss {
		for i, y := range s.ys {
			if y <= 0 {
				continue
			}
			x, yy := px(xs[i]), py(y)
			for dx := -3; dx <= 3; dx++ {
				for dy := -3; dy <= 3; dy++ {
					img.Set(x+dx, yy+dy, s.c)
				}
			}
			if i > 0 && s.ys[i-1] > 0 {
				line(img, px(xs[i-1]), py(s.ys[i-1]), x, yy, s.c, false)
			}
		}
		text(img, legendX, bottom+52, "* "+s.name, s.c)
		legendX += 7*len(s.name) + 30
	}
	text(img, left+10, bottom+66, "- - linear (slope 1) through the first point", grey)
}

// human prints a tick value: 1, 10, 100, 1k, 10k, 1M, ...
func human(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.0fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1:
		return fmt.Sprintf("%.0f", v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}
