package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func writeFile(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func noEnv(string) string { return "" }

func TestBuildsImageWithFilesUserAndEntrypoint(t *testing.T) {
	dir := t.TempDir()
	mgr := writeFile(t, dir, "manager", "manager-binary", 0o755)
	cli := writeFile(t, dir, "blis", "blis-binary", 0o700)
	out := filepath.Join(dir, "img.tar")
	args := []string{"-out", out, "-tag", "example.com/blis:dev",
		"-file", mgr + ":/manager", "-file", cli + ":/usr/bin/blis:755", "-dir", "/tmp:1777",
		"-user", "65532:65532", "-entrypoint", "/manager", "-cmd", "--leader-elect",
		"-env", "PATH=/", "-label", "org.opencontainers.image.title=blis"}
	var stdout strings.Builder
	if err := run(args, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "sha256:") {
		t.Fatalf("digest not reported: %q", stdout.String())
	}
	tag, _ := name.NewTag("example.com/blis:dev")
	img, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || !slices.Equal(cf.Config.Entrypoint, []string{"/manager"}) ||
		!slices.Equal(cf.Config.Cmd, []string{"--leader-elect"}) || !slices.Equal(cf.Config.Env, []string{"PATH=/"}) {
		t.Fatalf("unexpected config: %+v", cf.Config)
	}
	if cf.OS != "linux" || cf.Config.Labels["org.opencontainers.image.title"] != "blis" || cf.Created.Unix() != 0 {
		t.Fatalf("unexpected os/labels/created: %s %v %v", cf.OS, cf.Config.Labels, cf.Created)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("want one layer, got %d (%v)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	got := map[string]*tar.Header{}
	var order []string
	contents := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[h.Name], order = h, append(order, h.Name)
		b, _ := io.ReadAll(tr)
		contents[h.Name] = string(b)
	}
	want := []string{"etc/", "etc/group", "etc/passwd", "manager", "tmp/", "usr/", "usr/bin/", "usr/bin/blis"}
	if !slices.Equal(order, want) {
		t.Fatalf("layer entries %v, want %v", order, want)
	}
	if got["tmp/"].Mode != 0o1777 || got["usr/bin/blis"].Mode != 0o755 || got["manager"].Mode != 0o755 {
		t.Fatalf("modes: tmp %o blis %o manager %o", got["tmp/"].Mode, got["usr/bin/blis"].Mode, got["manager"].Mode)
	}
	if got["manager"].Uid != 0 || contents["manager"] != "manager-binary" || contents["usr/bin/blis"] != "blis-binary" {
		t.Fatalf("file content or owner wrong: %+v", got["manager"])
	}
	if !strings.Contains(contents["etc/passwd"], "nonroot:x:65532:65532:") {
		t.Fatalf("passwd lacks the non-root user: %q", contents["etc/passwd"])
	}
}

func TestSameInputsGiveSameDigest(t *testing.T) {
	dir := t.TempDir()
	bin := writeFile(t, dir, "app", "app", 0o755)
	digest := func(out string) string {
		var s strings.Builder
		if err := run([]string{"-out", filepath.Join(dir, out), "-tag", "example.com/app:1", "-file", bin + ":/app", "-entrypoint", "/app"}, &s); err != nil {
			t.Fatal(err)
		}
		return strings.Fields(s.String())[1]
	}
	a := digest("a.tar")
	// A changed modification time on the host must not change the image.
	if err := os.Chtimes(bin, time.Unix(12345, 0), time.Unix(12345, 0)); err != nil {
		t.Fatal(err)
	}
	if b := digest("b.tar"); a != b {
		t.Fatalf("digests differ: %s vs %s", a, b)
	}
}

func TestSourceDateEpoch(t *testing.T) {
	dir := t.TempDir()
	bin := writeFile(t, dir, "app", "app", 0o755)
	o, err := parseArgs([]string{"-tag", "x.io/a:b", "-file", bin + ":/app"}, func(k string) string {
		if k == "SOURCE_DATE_EPOCH" {
			return "1700000000"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.epoch.Unix() != 1700000000 {
		t.Fatalf("epoch %v", o.epoch)
	}
	if !slices.Equal(o.env, []string{defaultPath}) {
		t.Fatalf("default env %v", o.env)
	}
}

func TestRejectsBadArguments(t *testing.T) {
	dir := t.TempDir()
	bin := writeFile(t, dir, "app", "app", 0o755)
	cases := map[string][]string{
		"no tag":        {"-file", bin + ":/app"},
		"no file":       {"-tag", "x.io/a:b"},
		"relative dst":  {"-tag", "x.io/a:b", "-file", bin + ":app"},
		"root dst":      {"-tag", "x.io/a:b", "-file", bin + ":/"},
		"bad mode":      {"-tag", "x.io/a:b", "-file", bin + ":/app:9"},
		"bad user":      {"-tag", "x.io/a:b", "-file", bin + ":/app", "-user", "nonroot"},
		"bad env":       {"-tag", "x.io/a:b", "-file", bin + ":/app", "-env", "NOVALUE"},
		"bad platform":  {"-tag", "x.io/a:b", "-file", bin + ":/app", "-platform", "linux"},
		"extra operand": {"-tag", "x.io/a:b", "-file", bin + ":/app", "extra"},
	}
	for name, args := range cases {
		if _, err := parseArgs(args, noEnv); err == nil {
			t.Errorf("%s: accepted %q", name, args)
		}
	}
	dup := []string{"-out", filepath.Join(dir, "o.tar"), "-tag", "x.io/a:b", "-file", bin + ":/app", "-file", bin + ":/app"}
	if err := run(dup, io.Discard); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicate path accepted: %v", err)
	}
	if err := run([]string{"-out", filepath.Join(dir, "o.tar"), "-tag", "x.io/a:b", "-file", dir + ":/d"}, io.Discard); err == nil {
		t.Fatal("a directory was accepted as -file")
	}
}
