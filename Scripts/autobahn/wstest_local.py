# Runs wstest with every listening socket (TCP and TLS) on 127.0.0.1: the fuzzing server binds 0.0.0.0 by default,
# which would expose a deliberately misbehaving server to the network. Python 2.7 (the suite's only
# runtime). Usage: python2.7 wstest_local.py -m fuzzingserver -s spec.json
from autobahntestsuite import choosereactor  # must come first: it installs the reactor
from twisted.internet import reactor

_listenTCP = reactor.listenTCP
_listenSSL = reactor.listenSSL


def _listenLocal(port, factory, backlog=50, interface=''):
    return _listenTCP(port, factory, backlog, '127.0.0.1')


def _listenLocalSSL(port, factory, contextFactory, backlog=50, interface=''):
    return _listenSSL(port, factory, contextFactory, backlog, '127.0.0.1')


reactor.listenTCP = _listenLocal
reactor.listenSSL = _listenLocalSSL  # the fuzzing server over TLS (run.sh --tls)

from autobahntestsuite import wstest  # noqa: E402  (after the patch, on purpose)

wstest.run()
