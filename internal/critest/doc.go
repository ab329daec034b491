// Package critest is a CRI RuntimeServiceClient fake for unit tests: it
// answers at once, hangs chosen methods until their context ends (or until
// released), fails chosen ones, counts calls, and streams or answers
// Unimplemented for the list streams.
//
// It names the methods by their gRPC names ("ListPodSandbox",
// "StreamContainers", ...), the strings of cri's Method constants, and
// imports nothing of the module, so cri's own tests can use it. The real
// behaviour is tested against containerd in test/integration.
package critest
