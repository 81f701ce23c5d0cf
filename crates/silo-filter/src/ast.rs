//! The parsed selector: a tree that keeps the distinctions Apache's parser checks against
//! (a literal, a property, a boolean-valued expression), built once per subscription.
//!
//! AND and OR chains are stored flat (one node with all operands), which evaluates exactly as
//! Apache's left-nested pairs do (operands in order, the first decisive one stops the rest) and
//! keeps the tree shallow however long the chain. BETWEEN is one node rather than Apache's
//! `>= AND <=` pair, with the same results. Operator nodes keep the byte offset of their
//! operator for evaluation errors.

use crate::value::Order;

/// The byte offset of an operator. Equal to every other: two trees that differ only in where
/// their operators stand (blanks, comments) are the same selector.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At(pub(crate) usize);

impl PartialEq for At {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lit {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(Box<str>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextOp {
    Contains,
    StartsWith,
    EndsWith,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    /// A literal (Apache's constant expression; TRUE, FALSE and NULL are also boolean).
    Lit(Lit),
    /// A property's value.
    Prop(Box<str>),
    /// Unary minus: negates a number, gives null for anything else.
    Neg(Box<Expr>),
    /// A property where a boolean is needed: null when missing, false when present.
    Cast(Box<str>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    /// `=` (and IS NULL, which is `= NULL` without the parser's NULL check).
    Eq {
        l: Box<Expr>,
        r: Box<Expr>,
        at: At,
    },
    Order {
        op: Order,
        l: Box<Expr>,
        r: Box<Expr>,
        at: At,
    },
    Between {
        value: Box<Expr>,
        low: Box<Expr>,
        high: Box<Expr>,
        negated: bool,
        at: At,
    },
    /// `name [NOT] IN (...)`; the list is sorted and deduplicated for a binary search.
    In {
        name: Box<str>,
        list: Box<[Box<str>]>,
        negated: bool,
    },
    Text {
        op: TextOp,
        value: Box<Expr>,
        needle: Box<str>,
        negated: bool,
    },
}

impl Expr {
    /// Whether Apache treats this as a boolean expression.
    pub(crate) fn is_boolean(&self) -> bool {
        !matches!(
            self,
            Self::Lit(Lit::Int(_) | Lit::Long(_) | Lit::Double(_) | Lit::Str(_)) | Self::Prop(_) | Self::Neg(_)
        )
    }
}
