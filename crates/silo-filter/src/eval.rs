//! Evaluation of a parsed selector against one message's properties.
//!
//! Three-valued logic as in Apache: a missing property is null; AND is false as soon as an
//! operand is false, else null if any operand was null, else true; OR likewise with true; NOT
//! of null is null. Operands are evaluated left to right and an operand after the decisive one
//! is not evaluated at all, so its errors do not count. An error anywhere else fails the whole
//! evaluation. Nothing here allocates: values are `Copy` and borrow from the tree or from the
//! properties, and the recursion is bounded by the parser's depth limit.

use crate::ast::{At, Expr, Lit, TextOp};
use crate::error::{EvalError, EvalErrorKind};
use crate::properties::Properties;
use crate::value::{Order, Val, equal, order};

type Eval<'a> = Result<Val<'a>, EvalError>;

fn fail(at: At) -> impl FnOnce(EvalErrorKind) -> EvalError {
    move |kind| EvalError { offset: at.0, kind }
}

/// Reads a boolean operand: true, false or null.
fn truth(v: Val<'_>) -> Result<Option<bool>, EvalError> {
    match v {
        Val::Bool(b) => Ok(Some(b)),
        Val::Null => Ok(None),
        _ => Err(EvalError { offset: 0, kind: EvalErrorKind::NotBoolean }),
    }
}

fn tri(v: Option<bool>) -> Val<'static> {
    v.map_or(Val::Null, Val::Bool)
}

/// AND (`decisive == false`) or OR (`decisive == true`) over operands in order.
fn logic<'a, P: Properties + ?Sized>(operands: &'a [Expr], decisive: bool, props: &'a P) -> Eval<'a> {
    let mut saw_null = false;
    for operand in operands {
        match truth(operand.eval(props)?)? {
            Some(b) if b == decisive => return Ok(Val::Bool(decisive)),
            Some(_) => {}
            None => saw_null = true,
        }
    }
    Ok(if saw_null { Val::Null } else { Val::Bool(!decisive) })
}

impl Expr {
    pub(crate) fn eval<'a, P: Properties + ?Sized>(&'a self, props: &'a P) -> Eval<'a> {
        Ok(match self {
            Self::Lit(lit) => match lit {
                Lit::Null => Val::Null,
                Lit::Bool(b) => Val::Bool(*b),
                Lit::Int(i) => Val::Int(*i),
                Lit::Long(l) => Val::Long(*l),
                Lit::Double(d) => Val::Double(*d),
                Lit::Str(s) => Val::Str(s),
            },
            Self::Prop(name) => props.get(name).map_or(Val::Null, Val::Str),
            Self::Neg(inner) => match inner.eval(props)? {
                Val::Int(i) => Val::Int(i.wrapping_neg()),
                Val::Long(l) => Val::Long(l.wrapping_neg()),
                Val::Double(d) => Val::Double(-d),
                _ => Val::Null,
            },
            Self::Cast(name) => props.get(name).map_or(Val::Null, |_| Val::Bool(false)),
            Self::And(operands) => logic(operands, false, props)?,
            Self::Or(operands) => logic(operands, true, props)?,
            Self::Not(inner) => tri(truth(inner.eval(props)?)?.map(|b| !b)),
            Self::Eq { l, r, at } => {
                let l = l.eval(props)?;
                let r = r.eval(props)?;
                equal(l, r).map_err(fail(*at))?
            }
            Self::Order { op, l, r, at } => {
                let l = l.eval(props)?;
                if matches!(l, Val::Null) {
                    return Ok(Val::Null);
                }
                order(*op, l, r.eval(props)?).map_err(fail(*at))?
            }
            Self::Between { value, low, high, negated, at } => {
                let v = value.eval(props)?;
                // Apache: `v >= low AND v <= high`, or `v < low OR v > high` for NOT BETWEEN.
                let (first, second, decisive) = if *negated {
                    ((Order::Lt, low), (Order::Gt, high), true)
                } else {
                    ((Order::Ge, low), (Order::Le, high), false)
                };
                let a = truth(order(first.0, v, first.1.eval(props)?).map_err(fail(*at))?)?;
                if a == Some(decisive) {
                    return Ok(Val::Bool(decisive));
                }
                let b = truth(order(second.0, v, second.1.eval(props)?).map_err(fail(*at))?)?;
                if b == Some(decisive) {
                    return Ok(Val::Bool(decisive));
                }
                if a.is_none() || b.is_none() { Val::Null } else { Val::Bool(!decisive) }
            }
            Self::In { name, list, negated } => match props.get(name) {
                None => Val::Null,
                Some(v) => Val::Bool(list.binary_search_by(|item| (**item).cmp(v)).is_ok() != *negated),
            },
            Self::Text { op, value, needle, negated } => {
                if needle.is_empty() {
                    return Ok(Val::Bool(false));
                }
                match value.eval(props)? {
                    Val::Str(s) => {
                        let found = match op {
                            TextOp::Contains => s.contains(&**needle),
                            TextOp::StartsWith => s.starts_with(&**needle),
                            TextOp::EndsWith => s.ends_with(&**needle),
                        };
                        Val::Bool(found != *negated)
                    }
                    _ => Val::Bool(false),
                }
            }
        })
    }
}
