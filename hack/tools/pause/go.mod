module blis-operator/hack/tools/pause

go 1.26.0
