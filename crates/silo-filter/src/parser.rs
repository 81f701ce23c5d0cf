//! The recursive-descent parser, one function per precedence level of Apache's grammar (from
//! loosest: OR, AND, equality, comparison, unary, primary), with the checks Apache makes while
//! it builds its tree (no NULL with `=`, no strings with `>`, IN only on a property, BETWEEN
//! bounds in order, ...).
//!
//! Recursion happens only through parentheses and unary operators and is capped at
//! [`MAX_DEPTH`]; operator chains are loops, and the depth of the tree they build is capped at
//! the same limit (AND and OR chains are flat, so only chains such as `a = 1 = TRUE = ...` can
//! reach it). The caps keep both parsing and evaluation far from the end of any thread's stack.

use crate::ast::{At, Expr, Lit, TextOp};
use crate::error::{ParseError, ParseErrorKind};
use crate::lexer::{Lexer, Tok, Token};
use crate::value::{Order, Val, compare};
use crate::{MAX_DEPTH, MAX_IN_LIST_LEN};

/// A parsed operand: the tree, its depth and where its text starts.
#[derive(Debug)]
struct Node {
    expr: Expr,
    depth: usize,
    start: usize,
}

#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) root: Expr,
    /// Offset of the first token after the expression, when there is one.
    pub(crate) tail: Option<usize>,
}

const EXPECT_OPERAND: &str = "a literal, a property name, `(`, `+`, `-` or NOT";
const EXPECT_AFTER_NOT: &str = "CONTAINS, STARTSWITH, ENDSWITH, BETWEEN or IN after NOT";
const EXPECT_STRING: &str = "a string literal";

/// How a token reads in an error message.
fn describe(src: &str, token: &Token<'_>) -> String {
    if token.tok == Tok::End {
        return "end of input".to_owned();
    }
    let text = src.get(token.start..token.end).unwrap_or("");
    const MAX: usize = 40;
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX).collect();
        format!("`{cut}...`")
    } else {
        format!("`{text}`")
    }
}

/// How an operand reads in an error message.
fn describe_expr(expr: &Expr) -> String {
    match expr {
        Expr::Lit(Lit::Null) => "NULL".to_owned(),
        Expr::Lit(Lit::Bool(true)) => "TRUE".to_owned(),
        Expr::Lit(Lit::Bool(false)) => "FALSE".to_owned(),
        Expr::Lit(Lit::Int(i)) => format!("the number {i}"),
        Expr::Lit(Lit::Long(l)) => format!("the number {l}"),
        Expr::Lit(Lit::Double(d)) => format!("the number {d:?}"),
        Expr::Lit(Lit::Str(s)) => format!("the string '{}'", s.replace('\'', "''")),
        Expr::Prop(name) | Expr::Cast(name) => format!("the property {name}"),
        Expr::Neg(_) => "a negation".to_owned(),
        _ => "a boolean expression".to_owned(),
    }
}

fn lit_value(lit: &Lit) -> Val<'_> {
    match lit {
        Lit::Null => Val::Null,
        Lit::Bool(b) => Val::Bool(*b),
        Lit::Int(i) => Val::Int(*i),
        Lit::Long(l) => Val::Long(*l),
        Lit::Double(d) => Val::Double(*d),
        Lit::Str(s) => Val::Str(s),
    }
}

/// Decodes the body of a string literal (`''` is one quote).
fn unquote(body: &str) -> Box<str> {
    body.replace("''", "'").into_boxed_str()
}

pub(crate) struct Parser<'a> {
    src: &'a str,
    lexer: Lexer<'a>,
    peeked: Option<Token<'a>>,
    /// Parentheses and unary operators currently open.
    nesting: usize,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Self { src, lexer: Lexer::new(src), peeked: None, nesting: 0 }
    }

    fn error(&self, at: usize, kind: ParseErrorKind) -> ParseError {
        ParseError::new(self.src, at, kind)
    }

    fn peek(&mut self) -> Result<Token<'a>, ParseError> {
        if let Some(token) = self.peeked {
            return Ok(token);
        }
        let token = self.lexer.next_token()?;
        self.peeked = Some(token);
        Ok(token)
    }

    fn next(&mut self) -> Result<Token<'a>, ParseError> {
        let token = self.peek()?;
        self.peeked = None;
        Ok(token)
    }

    fn unexpected(&self, token: &Token<'_>, expected: &'static str) -> ParseError {
        self.error(token.start, ParseErrorKind::Unexpected { found: describe(self.src, token), expected })
    }

    fn expect(&mut self, tok: Tok<'static>, expected: &'static str) -> Result<Token<'a>, ParseError> {
        let token = self.next()?;
        if token.tok == tok { Ok(token) } else { Err(self.unexpected(&token, expected)) }
    }

    fn string_literal(&mut self) -> Result<Box<str>, ParseError> {
        let token = self.next()?;
        match token.tok {
            Tok::Str(body) => Ok(unquote(body)),
            _ => Err(self.unexpected(&token, EXPECT_STRING)),
        }
    }

    /// A node over `children` at `at`, refused when it would be too deep.
    fn node(&self, expr: Expr, child_depth: usize, start: usize, at: usize) -> Result<Node, ParseError> {
        let depth = child_depth.saturating_add(1);
        if depth > MAX_DEPTH {
            return Err(self.error(at, ParseErrorKind::TooDeep { max: MAX_DEPTH }));
        }
        Ok(Node { expr, depth, start })
    }

    /// Apache's `asBooleanExpression`: boolean expressions pass, a property is cast, anything
    /// else is refused.
    fn boolean(&self, node: Node) -> Result<Node, ParseError> {
        match node.expr {
            Expr::Prop(name) => Ok(Node { expr: Expr::Cast(name), ..node }),
            ref e if e.is_boolean() => Ok(node),
            ref e => Err(self.error(node.start, ParseErrorKind::NotBoolean { what: describe_expr(e) })),
        }
    }

    /// The whole selector; `strict` refuses anything after the expression, otherwise the
    /// position of what follows is reported in [`Parsed::tail`] (Apache ignores it).
    pub(crate) fn selector(mut self, strict: bool) -> Result<Parsed, ParseError> {
        let node = self.or()?;
        let root = self.boolean(node)?.expr;
        let next = self.peek()?;
        if next.tok == Tok::End {
            return Ok(Parsed { root, tail: None });
        }
        if strict {
            return Err(self.unexpected(&next, "an operator or the end of the selector"));
        }
        Ok(Parsed { root, tail: Some(next.start) })
    }

    /// A flat AND or OR chain.
    fn chain(
        &mut self,
        op: Tok<'static>,
        operand: fn(&mut Self) -> Result<Node, ParseError>,
        make: fn(Vec<Expr>) -> Expr,
    ) -> Result<Node, ParseError> {
        let first = operand(self)?;
        if self.peek()?.tok != op {
            return Ok(first);
        }
        let start = first.start;
        let first = self.boolean(first)?;
        let mut depth = first.depth;
        let mut operands = vec![first.expr];
        let mut at = start;
        while self.peek()?.tok == op {
            at = self.next()?.start;
            let next = operand(self)?;
            let next = self.boolean(next)?;
            depth = depth.max(next.depth);
            operands.push(next.expr);
        }
        self.node(make(operands), depth, start, at)
    }

    fn or(&mut self) -> Result<Node, ParseError> {
        self.chain(Tok::Or, Self::and, Expr::Or)
    }

    fn and(&mut self) -> Result<Node, ParseError> {
        self.chain(Tok::And, Self::equality, Expr::And)
    }

    fn equality(&mut self) -> Result<Node, ParseError> {
        let mut left = self.comparison()?;
        loop {
            let token = self.peek()?;
            let at = token.start;
            left = match token.tok {
                Tok::Eq | Tok::Ne => {
                    self.next()?;
                    let right = self.comparison()?;
                    for side in [&left, &right] {
                        if matches!(side.expr, Expr::Lit(Lit::Null)) {
                            return Err(self.error(at, ParseErrorKind::NullComparison));
                        }
                    }
                    if matches!(left.expr, Expr::Lit(Lit::Bool(_)))
                        && matches!(right.expr, Expr::Lit(ref r) if !matches!(r, Lit::Bool(_)))
                    {
                        return Err(self
                            .error(at, ParseErrorKind::BooleanLiteralComparison { what: describe_expr(&right.expr) }));
                    }
                    let depth = left.depth.max(right.depth);
                    let eq = self.node(
                        Expr::Eq { l: Box::new(left.expr), r: Box::new(right.expr), at: At(at) },
                        depth,
                        left.start,
                        at,
                    )?;
                    if token.tok == Tok::Ne {
                        self.node(Expr::Not(Box::new(eq.expr)), eq.depth, eq.start, at)?
                    } else {
                        eq
                    }
                }
                Tok::Is => {
                    self.next()?;
                    let after = self.next()?;
                    let negated = match after.tok {
                        Tok::Null => false,
                        Tok::Not => {
                            self.expect(Tok::Null, "NULL")?;
                            true
                        }
                        _ => return Err(self.unexpected(&after, "NULL or NOT NULL")),
                    };
                    let eq = self.node(
                        Expr::Eq { l: Box::new(left.expr), r: Box::new(Expr::Lit(Lit::Null)), at: At(at) },
                        left.depth,
                        left.start,
                        at,
                    )?;
                    if negated { self.node(Expr::Not(Box::new(eq.expr)), eq.depth, eq.start, at)? } else { eq }
                }
                _ => return Ok(left),
            };
        }
    }

    /// Apache's `checkLessThanOperand`: only numbers, properties and negations can be ordered.
    fn orderable(&self, node: &Node, at: usize) -> Result<(), ParseError> {
        let refused = match &node.expr {
            Expr::Lit(Lit::Int(_) | Lit::Long(_) | Lit::Double(_)) | Expr::Prop(_) | Expr::Neg(_) => false,
            Expr::Lit(_) => true,
            e => e.is_boolean(),
        };
        if refused {
            return Err(self.error(at, ParseErrorKind::NotOrderable { what: describe_expr(&node.expr) }));
        }
        Ok(())
    }

    fn comparison(&mut self) -> Result<Node, ParseError> {
        let mut left = self.unary()?;
        loop {
            let token = self.peek()?;
            let at = token.start;
            let order = match token.tok {
                Tok::Gt => Some(Order::Gt),
                Tok::Ge => Some(Order::Ge),
                Tok::Lt => Some(Order::Lt),
                Tok::Le => Some(Order::Le),
                _ => None,
            };
            if let Some(op) = order {
                self.next()?;
                let right = self.unary()?;
                self.orderable(&left, at)?;
                self.orderable(&right, at)?;
                let depth = left.depth.max(right.depth);
                left = self.node(
                    Expr::Order { op, l: Box::new(left.expr), r: Box::new(right.expr), at: At(at) },
                    depth,
                    left.start,
                    at,
                )?;
                continue;
            }
            let negated = match token.tok {
                Tok::Not => {
                    self.next()?;
                    let after = self.peek()?;
                    if !matches!(after.tok, Tok::Contains | Tok::StartsWith | Tok::EndsWith | Tok::Between | Tok::In) {
                        return Err(self.unexpected(&after, EXPECT_AFTER_NOT));
                    }
                    true
                }
                Tok::Contains | Tok::StartsWith | Tok::EndsWith | Tok::Between | Tok::In => false,
                _ => return Ok(left),
            };
            let token = self.next()?;
            left = match token.tok {
                Tok::Contains | Tok::StartsWith | Tok::EndsWith => {
                    let op = match token.tok {
                        Tok::Contains => TextOp::Contains,
                        Tok::StartsWith => TextOp::StartsWith,
                        _ => TextOp::EndsWith,
                    };
                    let needle = self.string_literal()?;
                    let depth = left.depth;
                    self.node(Expr::Text { op, value: Box::new(left.expr), needle, negated }, depth, left.start, at)?
                }
                Tok::Between => self.between(left, negated, at)?,
                _ => self.in_list(left, negated, at)?,
            };
        }
    }

    fn between(&mut self, value: Node, negated: bool, at: usize) -> Result<Node, ParseError> {
        let low = self.unary()?;
        self.expect(Tok::And, "AND between the BETWEEN bounds")?;
        let high = self.unary()?;
        // Apache checks literal bounds for BETWEEN (not for NOT BETWEEN, nor for a negated
        // literal such as `-5`, which is not a literal to it).
        if !negated && let (Expr::Lit(lo), Expr::Lit(hi)) = (&low.expr, &high.expr) {
            if matches!(lo, Lit::Null) || matches!(hi, Lit::Null) {
                return Err(self.error(at, ParseErrorKind::BetweenNull));
            }
            if !matches!(compare(lit_value(hi), lit_value(lo)), Ok(o) if o.is_ge()) {
                return Err(self.error(
                    at,
                    ParseErrorKind::BetweenBounds { low: describe_expr(&low.expr), high: describe_expr(&high.expr) },
                ));
            }
        }
        for side in [&value, &low, &high] {
            self.orderable(side, at)?;
        }
        let depth = value.depth.max(low.depth).max(high.depth);
        self.node(
            Expr::Between {
                value: Box::new(value.expr),
                low: Box::new(low.expr),
                high: Box::new(high.expr),
                negated,
                at: At(at),
            },
            depth,
            value.start,
            at,
        )
    }

    fn in_list(&mut self, left: Node, negated: bool, at: usize) -> Result<Node, ParseError> {
        self.expect(Tok::LParen, "`(` after IN")?;
        let mut list = vec![self.string_literal()?];
        loop {
            let token = self.next()?;
            match token.tok {
                Tok::Comma => {
                    if list.len() >= MAX_IN_LIST_LEN {
                        return Err(self.error(token.start, ParseErrorKind::InListTooLong { max: MAX_IN_LIST_LEN }));
                    }
                    list.push(self.string_literal()?);
                }
                Tok::RParen => break,
                _ => return Err(self.unexpected(&token, "`,` or `)` in the IN list")),
            }
        }
        let Expr::Prop(name) = left.expr else {
            return Err(self.error(at, ParseErrorKind::InNeedsProperty));
        };
        list.sort_unstable();
        list.dedup();
        self.node(Expr::In { name, list: list.into_boxed_slice(), negated }, left.depth, left.start, at)
    }

    fn unary(&mut self) -> Result<Node, ParseError> {
        let token = self.peek()?;
        if !matches!(token.tok, Tok::Plus | Tok::Minus | Tok::Not) {
            return self.primary();
        }
        self.next()?;
        self.nesting = self.nesting.saturating_add(1);
        if self.nesting > MAX_DEPTH {
            return Err(self.error(token.start, ParseErrorKind::TooDeep { max: MAX_DEPTH }));
        }
        let inner = self.unary()?;
        self.nesting = self.nesting.saturating_sub(1);
        let at = token.start;
        match token.tok {
            // Unary plus is no node at all in Apache: `+a` is the property itself.
            Tok::Plus => Ok(Node { start: at, ..inner }),
            Tok::Minus => self.node(Expr::Neg(Box::new(inner.expr)), inner.depth, at, at),
            _ => {
                let inner = self.boolean(inner)?;
                self.node(Expr::Not(Box::new(inner.expr)), inner.depth, at, at)
            }
        }
    }

    fn primary(&mut self) -> Result<Node, ParseError> {
        let token = self.next()?;
        let start = token.start;
        let leaf = |expr| Ok(Node { expr, depth: 1, start });
        match token.tok {
            Tok::Str(body) => leaf(Expr::Lit(Lit::Str(unquote(body)))),
            Tok::Decimal(text) => {
                let digits = text.strip_suffix(['l', 'L']).unwrap_or(text);
                let Ok(value) = digits.parse::<i64>() else {
                    return Err(self.error(start, ParseErrorKind::IntegerOutOfRange { literal: text.to_owned() }));
                };
                leaf(Expr::Lit(i32::try_from(value).map_or(Lit::Long(value), Lit::Int)))
            }
            Tok::Float(text) => {
                // Apache refuses a literal above the largest double (infinite) or below the
                // smallest positive one, which for a literal without sign means zero.
                match text.parse::<f64>() {
                    Ok(value) if value.is_finite() && value >= f64::from_bits(1) => leaf(Expr::Lit(Lit::Double(value))),
                    _ => Err(self.error(start, ParseErrorKind::FloatOutOfRange { literal: text.to_owned() })),
                }
            }
            Tok::True => leaf(Expr::Lit(Lit::Bool(true))),
            Tok::False => leaf(Expr::Lit(Lit::Bool(false))),
            Tok::Null => leaf(Expr::Lit(Lit::Null)),
            Tok::Ident(name) => leaf(Expr::Prop(name.into())),
            Tok::LParen => {
                self.nesting = self.nesting.saturating_add(1);
                if self.nesting > MAX_DEPTH {
                    return Err(self.error(start, ParseErrorKind::TooDeep { max: MAX_DEPTH }));
                }
                let inner = self.or()?;
                self.expect(Tok::RParen, "`)`")?;
                self.nesting = self.nesting.saturating_sub(1);
                Ok(Node { start, ..inner })
            }
            _ => Err(self.unexpected(&token, EXPECT_OPERAND)),
        }
    }
}
