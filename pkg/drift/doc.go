// Package drift decides whether a live child differs from the built one
// in what hivekeeper owns, and what JSON merge patch puts it back.
//
// A comparator projects both objects through the same normalising view,
// so that a child built and fed back as live (after the API server's JSON
// round trip and defaults) shows no drift by construction: fields the API
// server defaults and keys other writers add (labels, annotations,
// containers, volumes) never count. A patch body carries only the owned
// fields: maps merge key by key, owned lists are replaced whole, and a key
// hivekeeper owns but no longer wants is sent as null. What the API server
// defaults inside volume sources and a user's podTemplateSpec are compared
// through hash annotations instead of by value.
//
// Everything here is pure: it imports no client, lister or framework, and
// drifttest models the API server's defaulting for the parity tests.
package drift
