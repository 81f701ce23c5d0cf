//! The access-control model of RocketMQ 5.3 ("ACL 2.0"): users, and per user an ACL of policies
//! whose entries allow or deny actions on resources, optionally only from some addresses. Names
//! and their spellings are Java's, since operators type them (`Topic:orders*`, `Pub`, `Deny`)
//! and Java's admin tools print them.

use std::fmt;
use std::net::IpAddr;

/// A user's kind: a super user passes every authorization check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserType {
    Super,
    Normal,
}

/// Whether a user may sign requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserStatus {
    Enable,
    Disable,
}

/// An account: its name is the access key a client signs with, its password the secret key.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    pub username: String,
    pub password: String,
    pub user_type: UserType,
    pub user_status: UserStatus,
}

impl fmt::Debug for User {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The secret never reaches a log.
        f.debug_struct("User")
            .field("username", &self.username)
            .field("user_type", &self.user_type)
            .field("user_status", &self.user_status)
            .finish_non_exhaustive()
    }
}

/// What a request does to a resource. `Any` is only ever asked for (any granted action
/// satisfies it); `All` is only ever granted (it grants every action).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    All,
    Any,
    Pub,
    Sub,
    Create,
    Update,
    Delete,
    Get,
    List,
}

/// The outcome an entry gives when it is the one that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Deny,
}

/// Custom policies are consulted first; default ones only when no custom entry matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyType {
    Custom,
    Default,
}

/// What kind of thing a resource is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResourceKind {
    /// `*`: everything.
    Any,
    Cluster,
    Namespace,
    Topic,
    Group,
}

/// How a granted resource's name matches a requested one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamePattern {
    /// `Topic:*`: every name.
    Any,
    /// `Topic:orders`: that name.
    Literal(String),
    /// `Topic:orders*`: every name that starts so.
    Prefixed(String),
}

/// A resource in a policy entry: `*`, or `Kind:name`, `Kind:prefix*`, `Kind:*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub kind: ResourceKind,
    pub name: NamePattern,
}

/// One rule: on `resource`, `actions` get `decision`, from `source_ips` (every address if empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub resource: Resource,
    pub actions: Vec<Action>,
    pub source_ips: Vec<IpRange>,
    pub decision: Decision,
}

/// A set of entries of one type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub policy_type: PolicyType,
    pub entries: Vec<Entry>,
}

/// Everything granted to one subject (`User:alice`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acl {
    pub subject: String,
    pub policies: Vec<Policy>,
}

/// An address or a CIDR range, as an entry's source addresses are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpRange {
    /// As written (Java's tools print it back).
    pub text: String,
    network: IpAddr,
    /// `None`: the exact address.
    prefix: Option<u8>,
}

/// A resource a request touches: its kind and its exact name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    pub kind: ResourceKind,
    pub name: &'a str,
}

macro_rules! names {
    ($ty:ident { $($variant:ident = $name:literal),* $(,)? }) => {
        impl $ty {
            /// The name Java gives it.
            #[must_use]
            pub fn name(self) -> &'static str {
                match self { $(Self::$variant => $name),* }
            }

            /// Parsed as Java parses it: the name in any case.
            #[must_use]
            pub fn from_name(s: &str) -> Option<Self> {
                [$(Self::$variant),*].into_iter().find(|v| v.name().eq_ignore_ascii_case(s))
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

names!(UserType { Super = "Super", Normal = "Normal" });
names!(UserStatus { Enable = "enable", Disable = "disable" });
names!(Action {
    All = "All",
    Any = "Any",
    Pub = "Pub",
    Sub = "Sub",
    Create = "Create",
    Update = "Update",
    Delete = "Delete",
    Get = "Get",
    List = "List",
});
names!(Decision { Allow = "Allow", Deny = "Deny" });
names!(PolicyType { Custom = "Custom", Default = "Default" });
names!(ResourceKind { Any = "Any", Cluster = "Cluster", Namespace = "Namespace", Topic = "Topic", Group = "Group" });

/// Retry topics are named after their group: `%RETRY%group` is checked as the group.
const RETRY_PREFIX: &str = "%RETRY%";
const DLQ_PREFIX: &str = "%DLQ%";

/// Whether a topic is a group's retry topic.
#[must_use]
pub fn is_retry_topic(topic: &str) -> bool {
    topic.starts_with(RETRY_PREFIX)
}

/// A group's name without a retry or dead-letter prefix.
#[must_use]
pub fn group_name(name: &str) -> &str {
    name.strip_prefix(RETRY_PREFIX).or_else(|| name.strip_prefix(DLQ_PREFIX)).unwrap_or(name)
}

impl Resource {
    /// Parses `*`, `Kind:*`, `Kind:prefix*` or `Kind:name`; `None` for an unknown kind or blank.
    #[must_use]
    pub fn parse(key: &str) -> Option<Self> {
        if key.trim().is_empty() {
            return None;
        }
        if key == "*" {
            return Some(Self { kind: ResourceKind::Any, name: NamePattern::Any });
        }
        let (kind, name) = key.split_once(':').unwrap_or((key, ""));
        let kind = ResourceKind::from_name(kind)?;
        let name = if name == "*" {
            NamePattern::Any
        } else if let Some(prefix) = name.strip_suffix('*') {
            // Java takes what comes before the first `*`.
            NamePattern::Prefixed(prefix.split('*').next().unwrap_or_default().to_owned())
        } else {
            NamePattern::Literal(name.to_owned())
        };
        Some(Self { kind, name })
    }

    /// The key as written: `*`, `Topic:*`, `Topic:orders*`, `Topic:orders`.
    #[must_use]
    pub fn key(&self) -> String {
        if self.kind == ResourceKind::Any {
            return "*".into();
        }
        match &self.name {
            NamePattern::Any => format!("{}:*", self.kind),
            NamePattern::Literal(n) => format!("{}:{n}", self.kind),
            NamePattern::Prefixed(p) => format!("{}:{p}*", self.kind),
        }
    }

    /// Whether this granted resource covers `target`.
    #[must_use]
    pub fn covers(&self, target: Target<'_>) -> bool {
        if self.kind == ResourceKind::Any {
            return true;
        }
        if self.kind != target.kind {
            return false;
        }
        match &self.name {
            NamePattern::Any => true,
            NamePattern::Literal(n) => n == target.name,
            NamePattern::Prefixed(p) => target.name.starts_with(p.as_str()),
        }
    }

    /// How specific the resource is: when several entries match, the most specific decides.
    /// A literal name before a prefix (the longer prefix first), before every name of a kind,
    /// before `*`.
    fn specificity(&self) -> (u8, usize) {
        match (&self.kind, &self.name) {
            (ResourceKind::Any, _) => (0, 0),
            (_, NamePattern::Any) => (1, 0),
            (_, NamePattern::Prefixed(p)) => (2, p.len()),
            (_, NamePattern::Literal(_)) => (3, 0),
        }
    }
}

impl fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

impl Entry {
    /// Whether the entry speaks to a request for any of `wanted` on `target` from `from`.
    #[must_use]
    pub fn applies(&self, target: Target<'_>, wanted: &[Action], from: Option<IpAddr>) -> bool {
        self.resource.covers(target) && self.grants_any(wanted) && self.admits(from)
    }

    fn grants_any(&self, wanted: &[Action]) -> bool {
        if self.actions.is_empty() {
            return false;
        }
        wanted.contains(&Action::Any)
            || wanted.iter().any(|a| self.actions.contains(a) || self.actions.contains(&Action::All))
    }

    fn admits(&self, from: Option<IpAddr>) -> bool {
        self.source_ips.is_empty() || from.is_some_and(|ip| self.source_ips.iter().any(|r| r.contains(ip)))
    }
}

impl Acl {
    /// The entry that decides a request: among the custom policy's matching entries (the
    /// default policy's only if none), the most specific resource, a deny before an allow.
    #[must_use]
    pub fn deciding_entry(&self, target: Target<'_>, wanted: &[Action], from: Option<IpAddr>) -> Option<&Entry> {
        [PolicyType::Custom, PolicyType::Default].into_iter().find_map(|ty| {
            self.policies
                .iter()
                .filter(|p| p.policy_type == ty)
                .flat_map(|p| p.entries.iter())
                .filter(|e| e.applies(target, wanted, from))
                .max_by_key(|e| (e.resource.specificity(), e.decision == Decision::Deny))
        })
    }

    /// Merges `policies` in, as Java's `createAcl`/`updateAcl` do: an entry for a resource
    /// already present replaces that entry's actions, addresses and decision.
    pub fn merge(&mut self, policies: Vec<Policy>) {
        for policy in policies {
            match self.policies.iter_mut().find(|p| p.policy_type == policy.policy_type) {
                None => self.policies.push(policy),
                Some(old) => {
                    for entry in policy.entries {
                        match old.entries.iter_mut().find(|e| e.resource == entry.resource) {
                            Some(e) => *e = entry,
                            None => old.entries.push(entry),
                        }
                    }
                }
            }
        }
    }

    /// Removes the entry for `resource` from the policy of `policy_type` (and the policy if it
    /// is left empty).
    pub fn remove_entry(&mut self, policy_type: PolicyType, resource: &Resource) {
        for p in self.policies.iter_mut().filter(|p| p.policy_type == policy_type) {
            p.entries.retain(|e| &e.resource != resource);
        }
        self.policies.retain(|p| p.policy_type != policy_type || !p.entries.is_empty());
    }
}

impl IpRange {
    /// An address (`10.0.0.7`, `::1`) or a CIDR range (`10.0.0.0/8`, `fd00::/8`).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let (addr, prefix) = match text.split_once('/') {
            Some((addr, bits)) => (addr, Some(bits.parse::<u8>().ok()?)),
            None => (text, None),
        };
        let network: IpAddr = addr.parse().ok()?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        if prefix.is_some_and(|p| p > max) {
            return None;
        }
        Some(Self { text: text.to_owned(), network, prefix })
    }

    /// Whether `ip` is the address, or in the range. An IPv4 peer seen through an IPv6 socket
    /// (`::ffff:10.0.0.7`) counts as its IPv4 address.
    #[must_use]
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        match (self.network, ip, self.prefix) {
            (a, b, None) => a == b,
            (IpAddr::V4(net), IpAddr::V4(ip), Some(p)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(p)).unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip), Some(p)) => {
                let mask = u128::MAX.checked_shl(128 - u32::from(p)).unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn entry(resource: &str, actions: &[Action], decision: Decision) -> Entry {
        Entry { resource: Resource::parse(resource).unwrap(), actions: actions.to_vec(), source_ips: vec![], decision }
    }

    fn topic(name: &str) -> Target<'_> {
        Target { kind: ResourceKind::Topic, name }
    }

    #[test]
    fn resource_keys_parse_and_print_as_javas_do() {
        for key in ["*", "Topic:*", "Topic:orders*", "Topic:orders", "Group:g", "Cluster:DefaultCluster"] {
            assert_eq!(Resource::parse(key).unwrap().key(), key);
        }
        assert_eq!(Resource::parse("topic:orders").unwrap().key(), "Topic:orders");
        assert_eq!(Resource::parse("Queue:x"), None);
        assert_eq!(Resource::parse(" "), None);
        assert!(Resource::parse("Topic:ord*").unwrap().covers(topic("orders")));
        assert!(!Resource::parse("Topic:ord*").unwrap().covers(Target { kind: ResourceKind::Group, name: "orders" }));
        assert!(Resource::parse("*").unwrap().covers(Target { kind: ResourceKind::Group, name: "g" }));
    }

    #[test]
    fn the_most_specific_entry_decides_and_deny_wins_a_tie() {
        let acl = Acl {
            subject: "User:alice".into(),
            policies: vec![Policy {
                policy_type: PolicyType::Custom,
                entries: vec![
                    entry("Topic:*", &[Action::Pub], Decision::Allow),
                    entry("Topic:secret", &[Action::Pub], Decision::Deny),
                    entry("Topic:pay*", &[Action::Pub], Decision::Deny),
                    entry("Topic:payroll*", &[Action::Pub], Decision::Allow),
                    entry("Topic:both", &[Action::Pub], Decision::Allow),
                    entry("Topic:both", &[Action::All], Decision::Deny),
                ],
            }],
        };
        let decide = |t| acl.deciding_entry(topic(t), &[Action::Pub], None).map(|e| e.decision);
        assert_eq!(decide("orders"), Some(Decision::Allow));
        assert_eq!(decide("secret"), Some(Decision::Deny));
        assert_eq!(decide("payments"), Some(Decision::Deny));
        assert_eq!(decide("payroll-2026"), Some(Decision::Allow));
        assert_eq!(decide("both"), Some(Decision::Deny));
        assert_eq!(acl.deciding_entry(topic("orders"), &[Action::Sub], None), None);
        // Asking for any action is answered by any entry on the resource.
        assert!(acl.deciding_entry(topic("orders"), &[Action::Any], None).is_some());
    }

    #[test]
    fn default_policies_count_only_where_no_custom_entry_matches() {
        let acl = Acl {
            subject: "User:alice".into(),
            policies: vec![
                Policy { policy_type: PolicyType::Default, entries: vec![entry("*", &[Action::All], Decision::Deny)] },
                Policy {
                    policy_type: PolicyType::Custom,
                    entries: vec![entry("Topic:a", &[Action::Pub], Decision::Allow)],
                },
            ],
        };
        assert_eq!(acl.deciding_entry(topic("a"), &[Action::Pub], None).unwrap().decision, Decision::Allow);
        assert_eq!(acl.deciding_entry(topic("b"), &[Action::Pub], None).unwrap().decision, Decision::Deny);
    }

    #[test]
    fn source_addresses_and_ranges() {
        let r = IpRange::parse("10.1.0.0/16").unwrap();
        assert!(r.contains("10.1.200.3".parse().unwrap()));
        assert!(!r.contains("10.2.0.1".parse().unwrap()));
        assert!(r.contains("::ffff:10.1.0.9".parse().unwrap()));
        assert!(IpRange::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
        assert!(IpRange::parse("127.0.0.1").unwrap().contains("127.0.0.1".parse().unwrap()));
        assert!(IpRange::parse("fd00::/8").unwrap().contains("fd12::1".parse().unwrap()));
        for bad in ["10.0.0.0/33", "10.0.0", "x", "10.0.0.0/", "::/129", ""] {
            assert_eq!(IpRange::parse(bad), None, "{bad}");
        }
        let mut e = entry("Topic:a", &[Action::Pub], Decision::Allow);
        e.source_ips = vec![IpRange::parse("192.168.0.0/24").unwrap()];
        assert!(e.applies(topic("a"), &[Action::Pub], Some("192.168.0.7".parse().unwrap())));
        assert!(!e.applies(topic("a"), &[Action::Pub], Some("127.0.0.1".parse().unwrap())));
        assert!(!e.applies(topic("a"), &[Action::Pub], None));
    }

    #[test]
    fn merging_replaces_an_entry_per_resource_and_removal_drops_empty_policies() {
        let mut acl = Acl {
            subject: "User:a".into(),
            policies: vec![Policy {
                policy_type: PolicyType::Custom,
                entries: vec![entry("Topic:a", &[Action::Pub], Decision::Allow)],
            }],
        };
        acl.merge(vec![Policy {
            policy_type: PolicyType::Custom,
            entries: vec![
                entry("Topic:a", &[Action::Sub], Decision::Deny),
                entry("Group:g", &[Action::Sub], Decision::Allow),
            ],
        }]);
        assert_eq!(acl.policies.len(), 1);
        assert_eq!(
            acl.policies[0].entries,
            vec![entry("Topic:a", &[Action::Sub], Decision::Deny), entry("Group:g", &[Action::Sub], Decision::Allow)]
        );
        acl.remove_entry(PolicyType::Custom, &Resource::parse("Topic:a").unwrap());
        acl.remove_entry(PolicyType::Custom, &Resource::parse("Group:g").unwrap());
        assert!(acl.policies.is_empty());
    }

    #[test]
    fn retry_topics_are_their_groups() {
        assert!(is_retry_topic("%RETRY%g"));
        assert_eq!(group_name("%RETRY%g"), "g");
        assert_eq!(group_name("%DLQ%g"), "g");
        assert_eq!(group_name("g"), "g");
    }
}
