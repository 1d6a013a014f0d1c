/**
 * The project's own test fixture, not published: {@link dev.idem.testsupport.TestServers} (real servers for
 * integration tests), {@link dev.idem.testsupport.PrivateServer} (a server of a test's own, to restart or kill),
 * {@link dev.idem.testsupport.EmbeddedKafka} and {@link dev.idem.testsupport.ReadmeSnippets}.
 */
@NullMarked
package dev.idem.testsupport;

import org.jspecify.annotations.NullMarked;
