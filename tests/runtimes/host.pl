#!/usr/bin/perl
# The runtime matrix's host in Perl (tests/tests/suite/functional/runtimes.rs): spawn hook `gate` (defer 1 s the
# first time it is asked, then proceed)
# and dirty handler `wip` (commit everything, "wip perl: round N"), by hand over
# newline-delimited JSON-RPC 2.0 on stdio (docs/protocol.md). Core modules only.
use strict;
use warnings;
use JSON::PP;

my $json = JSON::PP->new->canonical;
$| = 1;
my $asked = 0;
while (my $line = <STDIN>) {
    my $req = $json->decode($line);
    my $m = $req->{method} // '';
    my %reply = (jsonrpc => '2.0', id => $req->{id});
    if ($m eq 'initialize') {
        $reply{result} = {protocol_version => 1, name => 'runtime-perl', version => '0.1.0',
            hooks => [{family => 'spawn_hook', name => 'gate'},
                      {family => 'dirty_handler', name => 'wip', priority => 10}]};
    } elsif ($m eq 'spawn_hook/before_spawn') {
        $reply{result} = $asked++ ? {action => 'proceed'}
            : {action => 'defer', defer_s => 1, reason => 'perl'};
    } elsif ($m eq 'dirty_handler/handle_dirty') {
        $reply{result} = {action => 'commit',
            message => 'wip perl: round ' . $req->{params}{ctx}{round_num}};
    } elsif ($m eq 'shutdown') {
        $reply{result} = undef;
    } else {
        $reply{error} = {code => -32601, message => "method not found: $m"};
    }
    print $json->encode(\%reply), "\n";
}
