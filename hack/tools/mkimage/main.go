// Command mkimage packs files (typically static binaries) into a single-layer container image and
// writes it as an image tarball that `ctr images import` and `docker load` accept, with no
// container engine and no registry involved.
//
//	mkimage -out image.tar -tag blis-operator:dev \
//	    -file bin/linux/manager:/manager -file bin/linux/blis:/blis \
//	    -user 65532:65532 -entrypoint /manager -env PATH=/
//
// The output is reproducible: every entry gets the same timestamp (SOURCE_DATE_EPOCH, or the Unix
// epoch) and root ownership, entries are sorted, so the same inputs give the same image digest.
package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// defaultPath is the PATH an image gets when no -env PATH=... is given (Docker's default).
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// fileSpec is one file copied into the image.
type fileSpec struct {
	src  string // path on the host
	dst  string // absolute path in the image
	mode int64  // permission bits in the image; 0 keeps the source's
}

// dirSpec is one directory created in the image with explicit permissions (e.g. /tmp 1777).
type dirSpec struct {
	dst  string
	mode int64
}

// options is everything mkimage needs to build and write one image.
type options struct {
	out        string
	tags       []string
	files      []fileSpec
	dirs       []dirSpec
	user       string
	entrypoint []string
	cmd        []string
	env        []string
	workdir    string
	labels     map[string]string
	platform   string
	epoch      time.Time
	passwd     bool
}

// listFlag collects every occurrence of a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// parseArgs turns the command line into options; getenv supplies SOURCE_DATE_EPOCH.
func parseArgs(args []string, getenv func(string) string) (*options, error) {
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	var files, dirs, tags, entrypoint, cmd, env, labels listFlag
	o := &options{labels: map[string]string{}}
	fs.StringVar(&o.out, "out", "image.tar", "output image tarball")
	fs.Var(&tags, "tag", "image reference to tag the image with (repeatable), e.g. example.com/app:dev")
	fs.Var(&files, "file", "SRC:DST[:MODE] file to copy into the image, MODE in octal (repeatable)")
	fs.Var(&dirs, "dir", "DST[:MODE] directory to create, MODE in octal, default 0755 (repeatable)")
	fs.StringVar(&o.user, "user", "", "user the container runs as, UID[:GID]")
	fs.Var(&entrypoint, "entrypoint", "entrypoint argument (repeatable, in order)")
	fs.Var(&cmd, "cmd", "default command argument (repeatable, in order)")
	fs.Var(&env, "env", "KEY=VALUE environment variable (repeatable)")
	fs.StringVar(&o.workdir, "workdir", "/", "working directory")
	fs.Var(&labels, "label", "KEY=VALUE image label (repeatable)")
	fs.StringVar(&o.platform, "platform", "linux/"+runtime.GOARCH, "OS/ARCH of the image")
	fs.BoolVar(&o.passwd, "passwd", true, "write /etc/passwd and /etc/group naming root and the -user UID")
	epoch := fs.Int64("epoch", -1, "timestamp of every entry, Unix seconds (default: $SOURCE_DATE_EPOCH or 0)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if len(tags) == 0 {
		return nil, errors.New("at least one -tag is required")
	}
	if len(files) == 0 {
		return nil, errors.New("at least one -file is required")
	}
	o.tags, o.entrypoint, o.cmd = tags, entrypoint, cmd

	for _, f := range files {
		parts := strings.Split(f, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" {
			return nil, fmt.Errorf("-file %q: want SRC:DST[:MODE]", f)
		}
		dst, err := imagePath(parts[1])
		if err != nil {
			return nil, fmt.Errorf("-file %q: %w", f, err)
		}
		spec := fileSpec{src: parts[0], dst: dst}
		if len(parts) == 3 {
			if spec.mode, err = parseMode(parts[2]); err != nil {
				return nil, fmt.Errorf("-file %q: %w", f, err)
			}
		}
		o.files = append(o.files, spec)
	}
	for _, d := range dirs {
		parts := strings.Split(d, ":")
		if len(parts) > 2 {
			return nil, fmt.Errorf("-dir %q: want DST[:MODE]", d)
		}
		dst, err := imagePath(parts[0])
		if err != nil {
			return nil, fmt.Errorf("-dir %q: %w", d, err)
		}
		spec := dirSpec{dst: dst, mode: 0o755}
		if len(parts) == 2 {
			if spec.mode, err = parseMode(parts[1]); err != nil {
				return nil, fmt.Errorf("-dir %q: %w", d, err)
			}
		}
		o.dirs = append(o.dirs, spec)
	}
	hasPath := false
	for _, e := range env {
		k, _, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-env %q: want KEY=VALUE", e)
		}
		hasPath = hasPath || k == "PATH"
	}
	if !hasPath {
		env = append(listFlag{defaultPath}, env...)
	}
	o.env = env
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("-label %q: want KEY=VALUE", l)
		}
		o.labels[k] = v
	}
	if o.user != "" {
		if _, _, err := parseUser(o.user); err != nil {
			return nil, err
		}
	}
	if _, _, ok := strings.Cut(o.platform, "/"); !ok {
		return nil, fmt.Errorf("-platform %q: want OS/ARCH", o.platform)
	}
	secs := *epoch
	if secs < 0 {
		secs = 0
		if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a Unix timestamp", s)
			}
			secs = v
		}
	}
	o.epoch = time.Unix(secs, 0).UTC()
	return o, nil
}

// imagePath validates an absolute path inside the image and returns it cleaned.
func imagePath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("path %q in the image must be absolute", p)
	}
	c := path.Clean(p)
	if c == "/" {
		return "", errors.New("path in the image must not be /")
	}
	return c, nil
}

// parseMode reads octal permission bits such as 755 or 1777.
func parseMode(s string) (int64, error) {
	m, err := strconv.ParseInt(s, 8, 64)
	if err != nil || m < 0 || m > 0o7777 {
		return 0, fmt.Errorf("mode %q is not octal permission bits", s)
	}
	return m, nil
}

// parseUser reads a numeric UID[:GID]; the GID defaults to the UID.
func parseUser(s string) (uid, gid int, err error) {
	u, g, hasGID := strings.Cut(s, ":")
	if uid, err = strconv.Atoi(u); err != nil || uid < 0 {
		return 0, 0, fmt.Errorf("-user %q: want a numeric UID[:GID]", s)
	}
	gid = uid
	if hasGID {
		if gid, err = strconv.Atoi(g); err != nil || gid < 0 {
			return 0, 0, fmt.Errorf("-user %q: want a numeric UID[:GID]", s)
		}
	}
	return uid, gid, nil
}

// entry is one member of the layer: a directory, or a file with its content source.
type entry struct {
	name    string // image path without the leading slash
	dir     bool
	mode    int64
	src     string // host file, for files copied from disk
	content []byte // inline content, for generated files
}

// layerEntries lists every layer member in a stable order, with parent directories implied.
func layerEntries(o *options) ([]entry, error) {
	byName := map[string]entry{}
	addParents := func(p string) {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			n := strings.TrimPrefix(d, "/") + "/"
			if _, ok := byName[n]; !ok {
				byName[n] = entry{name: n, dir: true, mode: 0o755}
			}
		}
	}
	add := func(e entry) error {
		if prev, ok := byName[e.name]; ok && !(prev.dir && e.dir) {
			return fmt.Errorf("/%s is given twice", strings.TrimSuffix(e.name, "/"))
		}
		byName[e.name] = e
		return nil
	}
	for _, d := range o.dirs {
		addParents(d.dst)
		if err := add(entry{name: strings.TrimPrefix(d.dst, "/") + "/", dir: true, mode: d.mode}); err != nil {
			return nil, err
		}
	}
	for _, f := range o.files {
		st, err := os.Stat(f.src)
		if err != nil {
			return nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file", f.src)
		}
		mode := f.mode
		if mode == 0 {
			mode = int64(st.Mode().Perm())
		}
		addParents(f.dst)
		if err := add(entry{name: strings.TrimPrefix(f.dst, "/"), mode: mode, src: f.src}); err != nil {
			return nil, err
		}
	}
	if o.passwd && o.user != "" {
		uid, gid, _ := parseUser(o.user)
		passwd := "root:x:0:0:root:/root:/sbin/nologin\n"
		group := "root:x:0:\n"
		if uid != 0 {
			passwd += fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, gid)
		}
		if gid != 0 {
			group += fmt.Sprintf("nonroot:x:%d:\n", gid)
		}
		for _, g := range []entry{
			{name: "etc/passwd", mode: 0o644, content: []byte(passwd)},
			{name: "etc/group", mode: 0o644, content: []byte(group)},
		} {
			addParents("/" + g.name)
			if err := add(g); err != nil {
				return nil, err
			}
		}
	}
	out := make([]entry, 0, len(byName))
	for _, e := range byName {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// writeLayer writes the uncompressed layer tar for o to w.
func writeLayer(w io.Writer, o *options) error {
	entries, err := layerEntries(o)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: o.epoch, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		switch {
		case e.dir:
			h.Typeflag = tar.TypeDir
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		case e.src == "":
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.content))
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(e.content); err != nil {
				return err
			}
		default:
			if err := copyFile(tw, h, e.src); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// copyFile writes header h and the content of src to tw.
func copyFile(tw *tar.Writer, h *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h.Typeflag, h.Size = tar.TypeReg, st.Size()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err != nil {
		return err
	}
	if n != st.Size() {
		return fmt.Errorf("%s changed while it was being read", src)
	}
	return nil
}

// buildImage assembles the image for o; the layer is staged in a file under tmpDir.
func buildImage(o *options, tmpDir string) (v1.Image, func(), error) {
	tmp, err := os.CreateTemp(tmpDir, "mkimage-layer-*.tar")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.Remove(tmp.Name()) }
	if err := writeLayer(tmp, o); err != nil {
		_ = tmp.Close()
		cleanup()
		return nil, nil, err
	}
	if err := tmp.Close(); err != nil {
		cleanup()
		return nil, nil, err
	}
	layer, err := tarball.LayerFromFile(tmp.Name(), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, _ = strings.Cut(o.platform, "/")
	cf.Created = v1.Time{Time: o.epoch}
	cf.Config.User = o.user
	cf.Config.Entrypoint = o.entrypoint
	cf.Config.Cmd = o.cmd
	cf.Config.Env = o.env
	cf.Config.WorkingDir = o.workdir
	if len(o.labels) > 0 {
		cf.Config.Labels = o.labels
	}
	cf.History = []v1.History{{Created: v1.Time{Time: o.epoch}, CreatedBy: "mkimage", Comment: "files: " + describeFiles(o)}}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return img, cleanup, nil
}

// describeFiles names the image paths of the copied files, for the image history.
func describeFiles(o *options) string {
	names := make([]string, 0, len(o.files))
	for _, f := range o.files {
		names = append(names, f.dst)
	}
	return strings.Join(names, " ")
}

// run builds the image described by args and writes the tarball.
func run(args []string, stdout io.Writer) error {
	o, err := parseArgs(args, os.Getenv)
	if err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	img, cleanup, err := buildImage(o, "")
	if err != nil {
		return err
	}
	defer cleanup()
	for _, t := range o.tags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("-tag %q: %w", t, err)
		}
		refs[tag] = img
	}
	tmpOut := o.out + ".tmp"
	if err := tarball.MultiRefWriteToFile(tmpOut, refs); err != nil {
		_ = os.Remove(tmpOut)
		return err
	}
	if err := os.Rename(tmpOut, o.out); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s %s %s\n", o.out, digest, strings.Join(o.tags, ","))
	return err
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "mkimage:", err)
		}
		os.Exit(2)
	}
}
