package evaluation

import _ "embed"

// DefaultManifestName is the file name of the embedded default manifests.
const DefaultManifestName = "quickstart.yaml"

// defaultManifests is a copy of config/samples/quickstart.yaml (a test keeps the two
// identical): the evaluation `blis evaluate` runs when it is given no files.
//
//go:embed embedded/quickstart.yaml
var defaultManifests []byte

// DefaultManifests returns the embedded default manifests.
func DefaultManifests() []byte {
	return append([]byte(nil), defaultManifests...)
}
