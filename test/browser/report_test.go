//go:build browser

// Package browser checks that the HTML reports of the blis CLI render in a real browser:
// `make test-browser` builds the CLI, writes an evaluation report, a comparison and a study
// report, opens each in Debian's headless Chromium, reads back the laid-out size of every chart
// and takes a screenshot, which must show the charts (not a blank or broken page).
//
// The reports are self-contained, so the browser runs with networking switched off: a chart that
// needed a remote script, font or stylesheet would not render.
package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// layoutProbe is appended to a copy of a report before it is opened: it measures every chart
// after layout and writes the result into the DOM, which --dump-dom then prints.
const layoutProbe = `<script>
(function () {
  var out = [];
  document.querySelectorAll('figure.chart').forEach(function (f) {
    var s = f.querySelector('svg');
    var r = s ? s.getBoundingClientRect() : null;
    out.push({id: f.id, svg: !!s, width: r ? r.width : 0, height: r ? r.height : 0,
      shapes: s ? s.querySelectorAll('path,line,polyline,rect,circle').length : 0});
  });
  var pre = document.createElement('pre');
  pre.id = 'blis-layout-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>`

// chart is one chart as the browser laid it out.
type chart struct {
	ID     string  `json:"id"`
	SVG    bool    `json:"svg"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Shapes int     `json:"shapes"`
}

var probeOut = regexp.MustCompile(`(?s)<pre id="blis-layout-probe">(.*?)</pre>`)

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("chromium is not installed; run hack/install-browser.sh (make test-browser does)")
	return ""
}

// browserArgs run Chromium headless, offline and deterministic enough for a screenshot.
func browserArgs(extra ...string) []string {
	return append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--disable-extensions", "--disable-background-networking",
		"--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--user-data-dir=" + os.TempDir() + "/blis-browser-profile",
	}, extra...)
}

// buildCLI builds cmd/blis into dir and returns its path.
func buildCLI(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "blis")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/blis")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func run(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("blis %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// layout opens a copy of the report with the probe and returns its charts.
func layout(t *testing.T, browser, report string) []chart {
	t.Helper()
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	probed := report + ".probe.html"
	i := bytes.LastIndex(html, []byte("</body>"))
	if i < 0 {
		t.Fatalf("%s has no </body>", report)
	}
	withProbe := append(append(append([]byte{}, html[:i]...), layoutProbe...), html[i:]...)
	if err := os.WriteFile(probed, withProbe, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(browser, browserArgs("--window-size=1280,1024", "--dump-dom", "file://"+probed)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", probed, err)
	}
	m := probeOut.FindSubmatch(out)
	if m == nil {
		t.Fatalf("the layout probe did not run in %s (script blocked or page broken)", report)
	}
	var charts []chart
	if err := json.Unmarshal([]byte(htmlUnescape(string(m[1]))), &charts); err != nil {
		t.Fatalf("probe output %q: %v", m[1], err)
	}
	return charts
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&quot;", `"`, "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// screenshot renders the report to a PNG and returns the decoded image.
func screenshot(t *testing.T, browser, report, out string) image.Image {
	t.Helper()
	cmd := exec.Command(browser, browserArgs("--window-size=1280,2400", "--screenshot="+out, "file://"+report)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot %s: %v\n%s", report, err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", out, err)
	}
	return img
}

// inked returns the fraction of pixels that are not near-white and the number of distinct
// colours (quantised), which tell a page with charts from a blank or text-only one.
func inked(img image.Image) (float64, int) {
	b := img.Bounds()
	colours := map[uint32]bool{}
	var ink, total int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			total++
			if r < 0xE000 || g < 0xE000 || bl < 0xE000 {
				ink++
			}
			colours[(r>>12)<<8|(g>>12)<<4|bl>>12] = true
		}
	}
	return float64(ink) / float64(total), len(colours)
}

// checkReport verifies that every wanted chart id is laid out with a drawn SVG, and that the
// screenshot has ink and colour.
func checkReport(t *testing.T, browser, report string, want []string) {
	t.Helper()
	charts := layout(t, browser, report)
	byID := map[string]chart{}
	for _, c := range charts {
		byID[c.ID] = c
		if !c.SVG || c.Width < 100 || c.Height < 80 || c.Shapes < 3 {
			t.Errorf("%s: chart %q is not drawn: %+v", filepath.Base(report), c.ID, c)
		}
	}
	for _, id := range want {
		if _, ok := byID[id]; !ok {
			t.Errorf("%s: chart %q missing (charts: %v)", filepath.Base(report), id, ids(charts))
		}
	}
	shot := screenshot(t, browser, report, strings.TrimSuffix(report, ".html")+".png")
	frac, colours := inked(shot)
	t.Logf("%s: %d charts, screenshot %v, %.1f%% inked, %d colours", filepath.Base(report), len(charts), shot.Bounds().Size(), 100*frac, colours)
	if frac < 0.02 || colours < 8 {
		t.Errorf("%s: the screenshot looks blank (%.2f%% inked, %d colours)", filepath.Base(report), 100*frac, colours)
	}
}

func ids(cs []chart) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func artifacts(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("BROWSER_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func TestReportsRenderInChromium(t *testing.T) {
	browser := chromium(t)
	dir := artifacts(t)
	bin := buildCLI(t, t.TempDir())

	evalReport := filepath.Join(dir, "report.html")
	data := filepath.Join(dir, "report.json")
	run(t, bin, "report", "-o", evalReport, "--data-output", data)
	t.Run("evaluation", func(t *testing.T) {
		checkReport(t, browser, evalReport, []string{"ttft-cdf", "itl-cdf", "e2e-cdf"})
	})

	t.Run("comparison", func(t *testing.T) {
		cmp := filepath.Join(dir, "compare.html")
		run(t, bin, "compare", data, data, "-o", cmp)
		checkReport(t, browser, cmp, []string{"ttft-cdf"})
	})

	t.Run("study", func(t *testing.T) {
		study := filepath.Join(dir, "study.html")
		samples := "../../config/samples/studies/"
		run(t, bin, "study", "-f", samples+"blis_v1alpha1_policystudy_inputs.yaml",
			"-f", samples+"blis_v1alpha1_policystudy_grid.yaml", "--report", study)
		checkReport(t, browser, study, []string{"pareto-sloattainment-critical-vs-ttftp99ms", "convergence"})
	})
	fmt.Fprintln(os.Stderr, "browser artifacts in", dir)
}
